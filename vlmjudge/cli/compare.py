"""`vlmjudge compare RUN.jsonl RUN.jsonl ... --out DIR`: is one run better than another, by how much,
how sure. Any method's run files (CLI or distributed runner) are read with their manifests; runs
measured with different instruments are refused in one line (status 2) unless --allow-mixed.
`compare` (`vlmjudge.compare`) is the command's Python form: it joins the runs to their method's
statistics through the registry, which `vlmjudge.stats` never imports.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..text import format_score


def compare(runs: Sequence[Any], *, labels: Sequence[str] | None = None, method: str | None = None,
            manifests: Sequence[Mapping] | None = None, allow_mixed: bool = False, n_resamples: int = 2000,
            seed: int = 0, confidence: float = 0.95) -> dict:
    """Compare runs (record lists or run file paths) under their method's own statistics.

    The method comes from `method`, else from the manifests (beside run files, or given); its
    registered `MethodSpec.statistics` are recomputed on resamples. Raises
    `vlmjudge.stats.runs.MixedRunsError` (one line) when the manifests disagree on method,
    version, pack or judge, unless `allow_mixed`. The result is `vlmjudge.stats.runs.compare_runs`'s:
    the headline statistic's "leaderboard", "pairwise" and "unpaired", every applicable statistic
    under "statistics", the "breakdown" by category, and "mixed" with its reasons.
    """
    from ..registry import get_method
    from ..stats.runs import compare_runs, read_runs

    read = read_runs(runs, labels=labels, method=method, manifests=manifests, allow_mixed=allow_mixed)
    return compare_runs(read, get_method(read.method).statistics, n_resamples=n_resamples, seed=seed,
                        confidence=confidence)


def run_compare(args: argparse.Namespace) -> int:
    """Compare the runs, write comparison.json and report.html, print the leaderboard's head."""
    from ..reports.comparison import write_comparison
    from ..stats.runs import MixedRunsError

    labels = args.labels.split(",") if args.labels else None
    try:
        result = compare(args.runs, labels=labels, method=args.method, allow_mixed=args.allow_mixed,
                         n_resamples=args.resamples, seed=args.seed, confidence=args.confidence)
    except MixedRunsError as error:
        print(f"vlmjudge compare: {error}", file=sys.stderr)
        return 2
    written = write_comparison(result, args.out, dpi=args.dpi)
    for row in result["leaderboard"]:
        print(f"{row.get('rank', '-')}. {row['label']}: {format_score(row['value'])} "
              f"[{format_score(row['low'])}, {format_score(row['high'])}] n={row['n']}")
    print(f"wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


def configure_compare(sub: argparse._SubParsersAction) -> None:
    """Add the `compare` sub-command."""
    from .report_command import add_dpi_flag

    parser = sub.add_parser("compare", help="compare runs of one method: leaderboard, paired differences, report",
                            description="Pairs items by id and recomputes the method's own statistic on "
                                        "bootstrap resamples; diff = b - a for each pair of runs (a listed first).")
    parser.add_argument("runs", nargs="+", help="two or more records files (.jsonl) with their manifests beside")
    parser.add_argument("--out", required=True, help="folder for comparison.json and report.html")
    parser.add_argument("--labels", default=None, help="comma-separated names of the runs (default: their folders)")
    parser.add_argument("--method", default=None, help="the method, when the runs carry no manifest")
    parser.add_argument("--allow-mixed", action="store_true",
                        help="compare runs of different methods, versions, packs or judges (the report says so)")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap and permutation resamples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--confidence", type=float, default=0.95)
    add_dpi_flag(parser)
    parser.set_defaults(func=run_compare)
