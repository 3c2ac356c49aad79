"""The score command of every method, written once: `run_scoring` over a method's `ScoreCommand`.

Every judging command runs the same steps: note where results go, read the inputs, check the
judge flags, check every image before a model loads (stopping when none is readable), put the
answer cache beside the records, build the method over the judge, say how much an earlier run
finished, score, write and summarise, then list what got no result and pick the exit status. A method's `ScoreCommand`
says only what differs: how it reads, builds, scores and summarises, and which errors are one
line and status 2.
"""
from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator, Sequence

from .exits import EXIT_USAGE, RUN, finish, nothing_readable, start_run
from .flags import cache_beside, check_judge
from .intake import Failure, Screened, screen
from .resume import say_resuming

#: Errors a step ends with: one line, status 2.
Errors = tuple[type[BaseException], ...]


@dataclass
class Outcome:
    """What a run got: how many items have a result, and the kept items that have none."""
    results: int
    failures: list[Failure] = field(default_factory=list)


class ScoreCommand:
    """One method's score command: the steps that differ between methods, run by `run_scoring`.

    `out` is the records file: the failures list goes beside it and Ctrl-C names it. A step that
    raises one of its errors (`read_errors`, `build_errors`, `score_errors`) ends the run with
    `error_prefix` and the error on one line, exit status 2; any other error goes on up.
    """
    error_prefix = "error: "
    read_errors: Errors = (OSError, ValueError)
    build_errors: Errors = (OSError, ValueError)
    score_errors: Errors = ()

    def __init__(self, args: argparse.Namespace, out: str | os.PathLike | None) -> None:
        self.args = args
        self.out = out

    def read(self) -> Sequence[Sequence[str | os.PathLike]]:
        """The items of the input, each as its image paths: what is checked before the model loads."""
        raise NotImplementedError

    def check(self) -> None:
        """What must hold before the images are decoded and the model loads: by default the judge
        flags (`check_judge`: --model, --device), so a typo fails in a second."""
        check_judge(self.args)

    def cache_home(self) -> str | os.PathLike | None:
        """The records file the default answer cache goes beside (`cache_beside`); None for no default."""
        return self.out

    def build(self, screened: Screened) -> None:
        """Load the judge (`judge_from_args`) and build the method over it; nothing by default."""

    def done_before(self, screened: Screened) -> int | None:
        """How many of the kept items an earlier run finished (its answers are cached); None when
        nothing resumes."""
        return None

    def score(self, screened: Screened) -> Any:
        """Score the kept items (a command that streams its records writes them here); what it
        returns goes to `summarize`."""
        raise NotImplementedError

    def summarize(self, screened: Screened, scored: Any) -> Outcome:
        """Write what is left to write (the manifest at least), print the summary, count the results."""
        raise NotImplementedError

    def partial_manifest(self) -> dict[str, Any] | None:
        """The manifest of this run as far as it got, written (marked partial) beside the records an
        interrupted run keeps; None when the command streams no records."""
        return None

    def keep_partial(self) -> None:
        """After an interrupt: mark the records saved so far as partial in their manifest, so a
        reader and the rerun know the file is not the whole run."""
        from ..outputs import write_manifest

        manifest = self.partial_manifest()
        if manifest is None or not RUN.saved or self.out is None or not Path(self.out).is_file():
            return
        write_manifest(self.out, {**manifest, "partial": True, "n_saved": RUN.saved})
        RUN.partial = True

    def refuse(self, error: BaseException) -> int:
        """A step's expected failure: one line on stderr, usage status."""
        print(f"{self.error_prefix}{error}", file=sys.stderr)
        return EXIT_USAGE


def run_scoring(command: ScoreCommand) -> int:
    """Run a score command's steps in the order every method shares; returns the exit status."""
    args, out = command.args, command.out
    start_run(out)
    try:
        items = command.read()
    except command.read_errors as error:
        return command.refuse(error)
    command.check()  # before the images are decoded: a --model typo fails in a second
    screened = screen(items, args.on_error)  # before the model loads
    if not screened.kept:
        return nothing_readable(screened, out)
    home = command.cache_home()
    if home is not None:
        cache_beside(args, home)
    RUN.cache = getattr(args, "cache", None)
    try:
        command.build(screened)
    except command.build_errors as error:
        return command.refuse(error)
    done = command.done_before(screened)
    if done is not None:
        say_resuming(done, len(screened.kept))
    try:
        scored = command.score(screened)
    except command.score_errors as error:
        return command.refuse(error)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the records written so far stay, marked partial
        command.keep_partial()
        raise
    outcome = command.summarize(screened, scored)
    return finish(len(items), outcome.results, [*screened.failures, *outcome.failures], out)


@contextmanager
def partial_output(out: str | os.PathLike) -> Iterator[IO[str]]:
    """A handle on `<out>.partial`, moved onto `out` when the block ends. A failed run leaves
    nothing half-written; an interrupted one keeps the whole records it wrote (`out`, which
    `ScoreCommand.keep_partial` marks partial), and a rerun resumes from the response cache."""
    out = Path(out)
    partial = out.with_name(out.name + ".partial")
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            yield handle
    except KeyboardInterrupt:
        if RUN.saved and partial.stat().st_size:
            os.replace(partial, out)
        else:
            partial.unlink(missing_ok=True)
        raise
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, out)
