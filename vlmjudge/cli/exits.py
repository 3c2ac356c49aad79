"""How a command-line run exits: its status, the failures it lists, and its one-line errors.

A judging command ends with `finish`, which lists every item that got no result as
`path: reason`, writes them to `<out>.failures.jsonl` and picks the exit status (`EXIT_HELP`
says which); `run_command` turns Ctrl-C, SIGTERM and usage problems into one line each.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import IO, TYPE_CHECKING, Iterable, Sequence

from .errors import CommandError

if TYPE_CHECKING:
    from .intake import Failure, Screened

#: Exit statuses of the judging commands (also in each command's --help).
EXIT_OK = 0           # every item has a result (an N/A image and a counted parse failure are results)
EXIT_USAGE = 2        # bad arguments, a bad --model or --device, a refused API key, an unreadable cache file
EXIT_SOME_FAILED = 3  # some items were skipped as bad input or failed to run; the rest have results
EXIT_NONE_SCORED = 4  # no item got a result
EXIT_INTERRUPTED = 130
EXIT_HELP = ("exit status: 0 every item has a result (N/A images and counted parse failures are results); "
             "3 some items were skipped as bad input or failed to run (listed, and written to "
             "<out>.failures.jsonl); 4 no item got a result; 2 a usage error (arguments, --model, --device, "
             "a refused API key, cache file); 130 interrupted (records written so far stay in --out, its "
             "manifest marked partial; a rerun resumes from the cache)")


class RunProgress:
    """What an interrupted run had finished, for the one line Ctrl-C or SIGTERM prints: the records
    saved to `out`, whether its manifest marks them partial, and the answer cache a rerun reads."""

    def __init__(self) -> None:
        self.saved = 0
        self.out: str | None = None
        self.partial = False
        self.cache: str | None = None

    def interrupted_line(self, resume_hint: str) -> str:
        """The line an interrupt prints: only a file that exists is named as holding results.

        Examples:
            >>> progress = RunProgress()
            >>> progress.cache = "runs/r.cache.sqlite"
            >>> progress.interrupted_line("a rerun resumes from the response cache")
            'interrupted: no results written yet; the answers so far are in runs/r.cache.sqlite, and a rerun with it resumes'
        """
        if self.saved and self.out and Path(self.out).is_file():
            marked = ", marked partial in its manifest" if self.partial else ""
            return f"interrupted: {self.saved} result(s) finished and saved to {self.out}{marked}; {resume_hint}"
        if self.cache:
            return (f"interrupted: no results written yet; the answers so far are in {self.cache}, "
                    "and a rerun with it resumes")
        return f"interrupted: no results written; {resume_hint}"


#: Updated by the judging commands as records are written.
RUN = RunProgress()


def run_command(run, prog: str, resume_hint: str = "a rerun resumes from the response cache") -> int:
    """Run a command's body: Ctrl-C and SIGTERM become one line with what was saved (status 130), a
    usage problem or an unreadable cache file one line with status 2.

    Examples:
        A usage problem in the body is one line on stderr and exit status 2:

        >>> def body():
        ...     raise CommandError("--out must name a file")
        >>> run_command(body, "vlmjudge demo")
        2
        >>> run_command(lambda: 0, "vlmjudge demo")
        0
    """
    import signal
    import threading

    from ..cache import CacheFileError

    def terminate(signum, frame) -> None:
        raise KeyboardInterrupt

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminate) if in_main else None
    try:
        return int(run() or 0)
    except KeyboardInterrupt:
        print(RUN.interrupted_line(resume_hint), file=sys.stderr)
        return EXIT_INTERRUPTED
    except (CommandError, CacheFileError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as error:  # a server refusing the API key is a usage problem; anything else goes on up
        if not _refused_key(error):
            raise
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _refused_key(error: BaseException) -> bool:
    """Whether a run failed because a server refused its API key (the openai backend's 401/403)."""
    from ..backends.openai import OpenAIKeyError
    return isinstance(error, OpenAIKeyError)


def failures_path(out: str | os.PathLike) -> Path:
    """Where a run's failures go: `<out>.failures.jsonl`, beside its records.

    Examples:
        >>> failures_path("runs/scores.jsonl").as_posix()
        'runs/scores.jsonl.failures.jsonl'
    """
    out = Path(out)
    return out.with_name(out.name + ".failures.jsonl")


def report_failures(failures: Iterable[Failure], out: str | os.PathLike | None,
                    stream: IO[str] | None = None) -> Path | None:
    """Print `path: reason` per failure, the bad input first and then what failed to run, each group
    under its count (the counts the summary line gives), and write them beside the output;
    returns the file, if any."""
    failures = list(failures)
    stream = stream or sys.stderr
    target = failures_path(out) if out else None
    if target is not None and target.exists() and not failures:
        target.unlink()  # a clean rerun leaves no stale list behind
    if not failures:
        return None
    bad = [failure for failure in failures if failure.bad_input]
    ran = [failure for failure in failures if not failure.bad_input]
    for group, header in ((bad, f"skipped {len(bad)} item(s) as bad input:"),
                          (ran, f"{len(ran)} item(s) failed to run:")):
        if group:
            print(header, file=stream)
        for failure in group:
            print(f"  {failure.line()}", file=stream)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            for failure in failures:
                handle.write(json.dumps(asdict(failure), ensure_ascii=False) + "\n")
        print(f"wrote {target}", file=stream)
    return target


def exit_status(n_items: int, n_results: int) -> int:
    """0 when every item has a result, 4 when none has, 3 in between.

    Examples:
        >>> exit_status(10, 10), exit_status(10, 7), exit_status(10, 0)
        (0, 3, 4)
    """
    if n_results >= n_items:
        return EXIT_OK
    return EXIT_NONE_SCORED if n_results == 0 else EXIT_SOME_FAILED


def finish(n_items: int, n_results: int, failures: Sequence[Failure], out: str | os.PathLike | None,
           stream: IO[str] | None = None) -> int:
    """List the failures (and write them beside `out`), and return the exit status for the run."""
    report_failures(sorted(failures, key=lambda failure: failure.index), out, stream)
    return exit_status(n_items, n_results)


def nothing_readable(screened: Screened, out: str | os.PathLike | None, stream: IO[str] | None = None) -> int:
    """Every item was bad input: list them and stop, without loading a model (exit status 4)."""
    report_failures(screened.failures, out, stream)
    return EXIT_NONE_SCORED


def start_run(out: str | os.PathLike | None) -> None:
    """Reset the progress that Ctrl-C reports: nothing saved yet, results going to `out`."""
    RUN.saved, RUN.partial, RUN.cache = 0, False, None
    RUN.out = None if out is None else str(out)
