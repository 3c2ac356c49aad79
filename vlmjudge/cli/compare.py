"""`vlmjudge compare RUN.jsonl RUN.jsonl ... --out DIR`: is one run better than another, by how much,
how sure. Any method's run files (CLI or distributed runner) are read with their manifests, every
record checked (`vlmjudge.run_records`); runs measured with different instruments are refused in
one line (status 2) unless --allow-mixed, and so is every input or setting it cannot use.
`compare` (`vlmjudge.compare`) is the command's Python form: it joins the runs to their method's
statistics through the registry, which `vlmjudge.stats` never imports.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..text import format_score

#: What an interrupted comparison says: it keeps no cache and writes its files only when done.
RESUME_HINT = "a comparison writes its files only when it is complete; run it again"


def _spec(name: str) -> Any:
    """The registered method, or a one-line CompareInputError naming what is registered."""
    from ..registry import get_method
    from ..stats.runs import CompareInputError

    try:
        return get_method(name)
    except (KeyError, ImportError, TypeError) as error:
        raise CompareInputError(f"method {name!r}: {error.args[0] if error.args else error}") from None


def compare(runs: Sequence[Any], *, labels: Sequence[str] | None = None, method: str | None = None,
            manifests: Sequence[Mapping] | None = None, allow_mixed: bool = False, n_resamples: int = 2000,
            seed: int = 0, confidence: float = 0.95) -> dict:
    """Compare runs (record lists or run file paths) under their method's own statistics.

    The method comes from `method`, else from the manifests (beside run files, or given); its
    registered `MethodSpec.statistics` are recomputed on resamples. Every record is checked by the
    record schema and its score against the method's `score_range`. Raises
    `vlmjudge.stats.runs.MixedRunsError` (one line) when the manifests disagree on version, pack or
    judge, unless `allow_mixed`; `vlmjudge.run_records.RunFileError`,
    `vlmjudge.stats.runs.CompareInputError` or `vlmjudge.stats.statistic.RowReadError` (one line
    each) for what it cannot use. The result is `vlmjudge.stats.runs.compare_runs`'s: the headline
    statistic's "leaderboard", "pairwise" and "unpaired", every applicable statistic under
    "statistics", the "breakdown" by category, and "mixed" with its reasons.
    """
    from ..stats.runs import compare_runs, read_runs

    read = read_runs(runs, labels=labels, method=method, manifests=manifests, allow_mixed=allow_mixed,
                     score_range=lambda name: tuple(_spec(name).score_range),
                     statistics=lambda name: _spec(name).statistics)
    return compare_runs(read, _spec(read.method).statistics, n_resamples=n_resamples, seed=seed,
                        confidence=confidence)


def _checked_settings(args: argparse.Namespace) -> list[str] | None:
    """The labels, after every setting is checked: a bad one is a one-line CommandError."""
    from .errors import CommandError
    from .preflight import require_out_folder
    from .resampling import check_resampling_flags

    if len(args.runs) < 2:
        raise CommandError("compare needs at least two runs (RUN.jsonl RUN.jsonl ...)")
    check_resampling_flags(args)
    require_out_folder(args.out, "comparison.json and report.html")
    return [label.strip() for label in args.labels.split(",")] if args.labels is not None else None


def run_compare(args: argparse.Namespace) -> int:
    """Compare the runs, write comparison.json and report.html, print the leaderboard's head."""
    from ..reports.comparison import write_comparison
    from ..run_records import RunFileError
    from ..stats.runs import CompareInputError, MixedRunsError
    from ..stats.statistic import RowReadError
    from .errors import CommandError

    labels = _checked_settings(args)
    try:
        result = compare(args.runs, labels=labels, method=args.method, allow_mixed=args.allow_mixed,
                         n_resamples=args.resamples, seed=args.seed, confidence=args.confidence)
    except (RunFileError, MixedRunsError, CompareInputError, RowReadError) as error:
        raise CommandError(str(error)) from None
    try:
        written = write_comparison(result, args.out, dpi=args.dpi)
    except OSError as error:
        raise CommandError(f"cannot write the comparison into {args.out}: {error.strerror or error}") from None
    for row in result["leaderboard"]:
        rank = f"{row['rank']}. " if "rank" in row else "- "
        print(f"{rank}{row['label']}: {format_score(row['value'])} "
              f"[{format_score(row['low'])}, {format_score(row['high'])}] n={row['n']} "
              f"unscored={row['n_unscored']} of {row['n_items']}")
    for line in result["warnings"]:
        print(f"warning: {line}")
    for pair in result["pairwise"]:
        if "interval_vs_p" in pair:
            print(f"note: {pair['b']} - {pair['a']}: {pair['interval_vs_p']}")
    print(f"wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


def configure_compare(sub: argparse._SubParsersAction) -> None:
    """Add the `compare` sub-command."""
    from .report_command import add_dpi_flag
    from .resampling import add_resampling_flags

    parser = sub.add_parser("compare", help="compare runs of one method: leaderboard, paired differences, report",
                            description="Pairs items by id and recomputes the method's own statistic on "
                                        "bootstrap resamples; diff = b - a for each pair of runs (a listed first). "
                                        "A record it cannot use (outside the record schema, a score that is not "
                                        "a finite number in the method's range, an id given twice) and every bad "
                                        "setting are one line and exit status 2.")
    parser.add_argument("runs", nargs="+", help="two or more records files (.jsonl) with their manifests beside")
    parser.add_argument("--out", required=True, help="folder for comparison.json and report.html")
    parser.add_argument("--labels", default=None, help="comma-separated names of the runs (default: their folders)")
    parser.add_argument("--method", default=None, help="the method, when the runs carry no manifest")
    parser.add_argument("--allow-mixed", action="store_true",
                        help="compare runs of one method scored with different versions, packs or judges (the "
                             "report says so); runs of different methods are refused even then")
    add_resampling_flags(parser, default_resamples=2000, resamples_help="bootstrap and permutation resamples")
    add_dpi_flag(parser)
    parser.set_defaults(func=run_compare, resume_hint=RESUME_HINT)
