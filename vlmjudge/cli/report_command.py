"""What every command that writes a report shares: `--dpi`, the resolution of its PNG figures (each
figure is also written as SVG), and a method's `report` sub-command built once.

`vlmjudge terravis|viescore2|fager|regeneration report`, `compare`, `agreement` and `benchmark`
all take the same `--dpi`, checked here in one line (exit status 2) before anything is read.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def dpi_value(text: str) -> int:
    """`--dpi`'s value: a whole number in the range `vlmjudge.reports.figures.check_dpi` allows."""
    from ..reports.figures import DPI_RANGE, check_dpi

    try:
        return check_dpi(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number from {DPI_RANGE[0]} to {DPI_RANGE[1]}, "
                                         f"got {text!r}") from None


def add_dpi_flag(parser: Any) -> None:
    """`--dpi N`: the resolution of the report's PNG figures; the SVG beside each has none."""
    from ..reports.figures import DEFAULT_DPI

    parser.add_argument("--dpi", type=dpi_value, default=DEFAULT_DPI,
                        help=f"resolution of the report's PNG figures, dots per inch (default {DEFAULT_DPI}); "
                             "every figure is also written as SVG beside its PNG")


def add_report_command(commands: Any, write_report: Any, *, source: str, source_help: str, help: str,
                       description: str, items: str = "images", errors: tuple[type[BaseException], ...] = ()) -> Any:
    """A method's `report` sub-command: SOURCE, --out DIR (report.html at its top), --worst N, --dpi N.

    It writes the report with `write_report(source, out, worst=, dpi=)` and lists what it wrote;
    unreadable input (a ReportInputError, an OSError, a ValueError or one of `errors`) is one line
    with status 2.
    """
    from ..reports.page import ReportInputError

    def run(args: Any) -> int:
        try:
            written = write_report(getattr(args, source), args.out, worst=args.worst, dpi=args.dpi)
        except (ReportInputError, OSError, ValueError, *errors) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        for path in written:
            print(f"wrote {path}")
        return 0

    rep = commands.add_parser("report", help=help, description=description)
    rep.add_argument(source, type=Path, help=source_help)
    rep.add_argument("--out", type=Path, required=True, help="folder to write the report into (report.html at its top)")
    rep.add_argument("--worst", type=int, default=20,
                     help=f"how many of the lowest-scored {items} to list (default 20)")
    add_dpi_flag(rep)
    rep.set_defaults(func=run)
    return rep
