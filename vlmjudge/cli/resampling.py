"""`--resamples`, `--seed` and `--confidence`: the resampling flags of `compare` and `agreement`.

Why one place: both commands take the same three settings and must refuse the same values in the
same words (`vlmjudge.stats.settings.resampling_problem`, the library's own rule).
"""
from __future__ import annotations

import argparse

from .errors import CommandError

#: The flags' names, as `resampling_problem` writes them into its message.
FLAG_NAMES = ("--resamples", "--seed", "--confidence")


def add_resampling_flags(parser: argparse.ArgumentParser, *, default_resamples: int, resamples_help: str) -> None:
    """The three flags; `resamples_help` says what is resampled (the range and default are added)."""
    from ..stats.runs import MAX_RESAMPLES

    parser.add_argument("--resamples", type=int, default=default_resamples,
                        help=f"{resamples_help}, 1 to {MAX_RESAMPLES:,} (default {default_resamples})")
    parser.add_argument("--seed", type=int, default=0, help="resampling seed, 0 or more (default 0)")
    parser.add_argument("--confidence", type=float, default=0.95, help="interval confidence (default 0.95)")


def check_resampling_flags(args: argparse.Namespace) -> None:
    """A one-line CommandError naming the first flag whose value cannot be used."""
    from ..stats.runs import MAX_RESAMPLES
    from ..stats.settings import resampling_problem

    problem = resampling_problem(args.resamples, args.seed, args.confidence, most=MAX_RESAMPLES, names=FLAG_NAMES)
    if problem is not None:
        raise CommandError(problem)
