"""`vlmjudge fager ...`: the Factual A/B test and re-scoring of saved runs, without a model.

    vlmjudge fager abtest FACTUAL GENERATED [--tie full|zero|skip] [--json]
    vlmjudge fager rescore details.jsonl [--out summary.csv] [--verdicts v.jsonl] [--check]

FACTUAL and GENERATED are each a details.jsonl (released layout or the project's Verdict
lines, re-scored exactly from the per-question answers) or a summary.csv (its
overall_score column); pairs are matched by the `index` column. When either side is a
summary.csv, both sides are compared at its 2-decimal rounding, so a rounded score never
beats or ties an exact one by accident.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fager.abtest import TIE_MODES, ab_test
from fager.parsing import AnswerParseError
from fager.qa_store import QAFormatError
from fager.replay import (
    ReplayFormatError, details_scores, format_summary, read_details, rescore, summary_row, summary_scores,
    write_verdicts,
)
from fager.scoring import GatingPolicy

_INPUT_ERRORS = (ReplayFormatError, QAFormatError, AnswerParseError, OSError, ValueError)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the fager subcommands to the `vlmjudge fager` parser (entry point `vlmjudge.commands`)."""
    commands = parser.add_subparsers(dest="fager_command", required=True)

    abtest = commands.add_parser("abtest", help="Factual A/B test: factual vs generated scores per prompt",
                                 description="Pairwise accuracy of FAGER scores: factual (reference) images "
                                             "should score at least as high as generated ones.")
    abtest.add_argument("factual", type=Path, help="details.jsonl or summary.csv of the factual images")
    abtest.add_argument("generated", type=Path, help="details.jsonl or summary.csv of the generated images")
    abtest.add_argument("--tie", choices=TIE_MODES, default="full",
                        help="ties count as correct (full, default), wrong (zero) or are left out (skip)")
    abtest.add_argument("--json", action="store_true", help="print the whole report, margins included, as JSON")
    _add_policy_flags(abtest)
    abtest.set_defaults(func=run_abtest)

    rescore_cmd = commands.add_parser("rescore", help="re-score a details.jsonl from its per-question answers",
                                      description="Recompute level and overall scores and decisions from the "
                                                  "recorded answers and write a summary.csv.")
    rescore_cmd.add_argument("details", type=Path, help="a details.jsonl from a FAGER run")
    rescore_cmd.add_argument("--out", type=Path, help="summary.csv to write (default: standard output)")
    rescore_cmd.add_argument("--verdicts", type=Path, help="also write the re-scored Verdicts as JSON lines")
    rescore_cmd.add_argument("--check", action="store_true",
                             help="exit 1 if a re-scored record differs from what the file recorded")
    _add_policy_flags(rescore_cmd)
    rescore_cmd.set_defaults(func=run_rescore)


def _add_policy_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--regenerate-threshold", type=float, default=20.0,
                        help="level-1 score at or below which the image is regenerated (default 20)")
    parser.add_argument("--keep-threshold", type=float, default=95.0,
                        help="overall score at or above which the image is kept (default 95)")
    parser.add_argument("--exclusive", action="store_true",
                        help="use strict comparisons (< regenerate, > keep), the paper's wording")


def _policy(args: argparse.Namespace) -> GatingPolicy:
    return GatingPolicy(regenerate_threshold=args.regenerate_threshold, keep_threshold=args.keep_threshold,
                        inclusive=not args.exclusive)


def _scores(path: Path, policy: GatingPolicy) -> dict[str, float | None]:
    if path.suffix.lower() == ".csv":
        return summary_scores(path)
    if path.suffix.lower() in (".jsonl", ".json"):
        return details_scores(path, policy)
    raise ValueError(f"{path}: expected a summary .csv or a details .jsonl")


def run_abtest(args: argparse.Namespace) -> int:
    """Print the A/B report; 2 on unreadable or unpaired input."""
    try:
        policy = _policy(args)
        factual, generated = _scores(args.factual, policy), _scores(args.generated, policy)
        unscored = sorted(k for side in (factual, generated) for k, v in side.items() if v is None)
        if unscored:
            raise ValueError(f"no overall score for index {', '.join(unscored[:10])}")
        if ".csv" in (args.factual.suffix.lower(), args.generated.suffix.lower()):
            factual = {k: round(v, 2) for k, v in factual.items()}
            generated = {k: round(v, 2) for k, v in generated.items()}
        report = ab_test(factual, generated, tie=args.tie)
    except _INPUT_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report.model_dump_json(indent=2) if args.json else report.describe())
    return 0


def run_rescore(args: argparse.Namespace) -> int:
    """Write the re-scored summary; report parse failures; with --check, 1 on any difference."""
    try:
        policy = _policy(args)
        recorded = read_details(args.details)
    except _INPUT_ERRORS as error:
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
        print(f"differs: index {old.index}: recorded {summary_row(old)[2:11]} re-scored {summary_row(new)[2:11]}",
              file=sys.stderr)
    print(f"check: {len(recorded) - len(differing)}/{len(recorded)} records reproduced", file=sys.stderr)
    return 1 if differing else 0


def main(argv: list[str] | None = None) -> int:
    """Run the fager commands standalone (`python -m fager.cli`), e.g. where the core CLI is absent."""
    parser = argparse.ArgumentParser(prog="vlmjudge fager", description=__doc__.splitlines()[0])
    configure(parser)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["configure", "main", "run_abtest", "run_rescore"]
