"""What the judging commands' --help says: each option's default, and the exit statuses.

Every judging command (`terravis score`, `viescore2 score`, `fager score`, `regeneration
compare`, ...) builds its parser with `DefaultsHelpFormatter` (or `RawDefaultsHelpFormatter`
where the description is laid out by hand), so `--help` gives each option's default without
each help text repeating it, and ends with `EXIT_EPILOG`.
"""
from __future__ import annotations

import argparse

from .exits import EXIT_HELP

#: The exit-status paragraph of every judging command's --help.
EXIT_EPILOG = (EXIT_HELP + ". With --on-error raise, the first bad image stops the run before the model "
               "loads: one line with its index in the input and its path, status 2.")


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Appends "(default: X)" to an option's help, unless the help already says its default, the
    default is None (the help then says in words what happens without the option), or the option
    is an on/off flag (off unless given)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text.lower() or not action.option_strings or action.required:
            return text
        if action.default is None or action.default is argparse.SUPPRESS or action.nargs == 0:
            return text
        return f"{text} (default: %(default)s)"


class RawDefaultsHelpFormatter(argparse.RawDescriptionHelpFormatter, DefaultsHelpFormatter):
    """`DefaultsHelpFormatter` for a parser whose description keeps its own line breaks."""


def describe(parser: argparse.ArgumentParser, option: str, text: str, *, required: bool = False) -> None:
    """Give a shared option (e.g. --cache from `add_judge_flags`) the help of this command; `required`
    makes argparse demand it (and its usage line show it without brackets)."""
    for action in parser._actions:
        if option in action.option_strings:
            action.help = text
            action.required = required
            return
    raise KeyError(f"{parser.prog} has no option {option}")
