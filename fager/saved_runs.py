"""`vlmjudge fager abtest` and `rescore`: commands over saved runs, with no judge, and the gating
flags every FAGER command shares."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .abtest import TIE_MODES, ab_test
from .parsing import AnswerParseError
from .qa_store import QAFormatError
from .replay import (
    ReplayFormatError, details_scores, format_summary, read_details, rescore, summary_row, summary_scores,
    write_verdicts,
)
from .scoring import GatingPolicy

#: What an unreadable or malformed input raises: one line and exit status 2, never a traceback.
INPUT_ERRORS = (ReplayFormatError, QAFormatError, AnswerParseError, OSError, ValueError)


def configure_saved_run_commands(commands: argparse._SubParsersAction) -> None:
    """Add `abtest` and `rescore` to the `vlmjudge fager` sub-commands."""
    abtest = commands.add_parser("abtest", help="Factual A/B test: factual vs generated scores per prompt",
                                 description="Pairwise accuracy of FAGER scores: factual (reference) images "
                                             "should score at least as high as generated ones.")
    abtest.add_argument("factual", type=Path, help="details.jsonl or summary.csv of the factual images")
    abtest.add_argument("generated", type=Path, help="details.jsonl or summary.csv of the generated images")
    abtest.add_argument("--tie", choices=TIE_MODES, default="full",
                        help="ties count as correct (full, default), wrong (zero) or are left out (skip)")
    abtest.add_argument("--json", action="store_true", help="print the whole report, margins included, as JSON")
    add_policy_flags(abtest)
    abtest.set_defaults(func=run_abtest)

    rescore_cmd = commands.add_parser("rescore", help="re-score a details.jsonl from its per-question answers "
                                                      "(writes a summary.csv to --out or standard output)",
                                      description="Recompute level and overall scores and decisions from the "
                                                  "recorded answers and write a summary.csv.")
    rescore_cmd.add_argument("details", type=Path, help="a details.jsonl from a FAGER run")
    rescore_cmd.add_argument("--out", type=Path, help="summary.csv to write (default: standard output)")
    rescore_cmd.add_argument("--verdicts", type=Path, help="also write the re-scored Verdicts as JSON lines")
    rescore_cmd.add_argument("--check", action="store_true",
                             help="exit 1 if a re-scored record differs from what the file recorded")
    add_policy_flags(rescore_cmd)
    rescore_cmd.set_defaults(func=run_rescore)


def add_policy_flags(parser: argparse.ArgumentParser) -> None:
    """The gating thresholds every command that decides keep/edit/regenerate takes."""
    parser.add_argument("--regenerate-threshold", type=float, default=20.0,
                        help="level-1 score at or below which the image is regenerated (default 20)")
    parser.add_argument("--keep-threshold", type=float, default=95.0,
                        help="overall score at or above which the image is kept (default 95)")
    parser.add_argument("--exclusive", action="store_true",
                        help="use strict comparisons (< regenerate, > keep), the paper's wording")


def policy_from_args(args: argparse.Namespace) -> GatingPolicy:
    """The gating policy the flags of `add_policy_flags` give."""
    return GatingPolicy(regenerate_threshold=args.regenerate_threshold, keep_threshold=args.keep_threshold,
                        inclusive=not args.exclusive)


def _scores(path: Path, policy: GatingPolicy) -> dict[str, float | None]:
    """Overall score per index of a summary CSV (as written) or a details JSONL (re-scored)."""
    if path.suffix.lower() == ".csv":
        return summary_scores(path)
    if path.suffix.lower() in (".jsonl", ".json"):
        return details_scores(path, policy)
    raise ValueError(f"{path}: expected a summary .csv or a details .jsonl")


def run_abtest(args: argparse.Namespace) -> int:
    """Print the A/B report; 2 on unreadable or unpaired input."""
    try:
        policy = policy_from_args(args)
        factual, generated = _scores(args.factual, policy), _scores(args.generated, policy)
        unscored = sorted(k for side in (factual, generated) for k, v in side.items() if v is None)
        if unscored:
            raise ValueError(f"no overall score for index {', '.join(unscored[:10])}")
        if ".csv" in (args.factual.suffix.lower(), args.generated.suffix.lower()):
            factual = {k: round(v, 2) for k, v in factual.items()}
            generated = {k: round(v, 2) for k, v in generated.items()}
        report = ab_test(factual, generated, tie=args.tie, strict=True)
    except INPUT_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report.model_dump_json(indent=2) if args.json else report.describe())
    return 0


def run_rescore(args: argparse.Namespace) -> int:
    """Write the re-scored summary; report parse failures; with --check, 1 on any difference."""
    try:
        policy = policy_from_args(args)
        recorded = read_details(args.details)
    except INPUT_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    rescored = [rescore(v, policy) for v in recorded]
    text = format_summary(rescored)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8", newline="")
    if args.verdicts is not None:
        write_verdicts(rescored, args.verdicts)
    failures = sum(v.counts.failed for v in rescored)
    print(f"rescored {len(rescored)} records, {failures} parse failures", file=sys.stderr)
    if not args.check:
        return 0
    differing = [(old, new) for old, new in zip(recorded, rescored) if summary_row(old) != summary_row(new)]
    for old, new in differing:
        print(f"differs: index {old.id}: recorded {summary_row(old)[2:11]} re-scored {summary_row(new)[2:11]}",
              file=sys.stderr)
    print(f"check: {len(recorded) - len(differing)}/{len(recorded)} records reproduced", file=sys.stderr)
    return 1 if differing else 0
