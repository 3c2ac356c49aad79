"""The progress bar of every long command: one tqdm bar on standard error, counting the command's
unit (images, pairs, prompts); a loop inside a method package reports each unit through a callback,
and a command that scores items in chunks moves its bar as the judge answers each batch
(`ItemProgress`), not only when a chunk's records are written.

It is off when standard error is no terminal (a log file or a pipe gets no bar lines) and with
--quiet, so scripted runs print only their summary.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Iterable


def add_quiet_flag(parser: argparse.ArgumentParser) -> None:
    """--quiet: no progress bar (it is also off when standard error is not a terminal) and no
    "loading judge ..." line."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar (there is none either when standard error is not a terminal) "
                             "and no 'loading judge ...' line")


def progress_bar(total: int, desc: str, args: argparse.Namespace | None = None, unit: str = "item") -> Any:
    """A tqdm bar over `total` items on standard error; a disabled one (its update and close do
    nothing) with --quiet or when standard error is not a terminal."""
    from tqdm.auto import tqdm

    quiet = bool(getattr(args, "quiet", False))
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=quiet or not sys.stderr.isatty())


def quiet_judge(judge: Any) -> Any:
    """`judge` with its own per-call bar off, so the command's bar is the only one; returns it."""
    if hasattr(judge, "progress"):
        judge.progress = False
    return judge


class ItemProgress:
    """A bar over items that moves per judge batch inside a chunk of items.

    Why: a method asks about a chunk in stages (every item's first question, then the next), so a
    chunk's records all come at its end, and a bar moved only then sits still for a whole chunk (a
    two-image first run showed 0/2 until it was done). Here each batch the judges answer
    (`Judge.on_batch`) moves the bar by the share of the chunk's expected requests now answered:
    the requests per item of the chunks finished so far, or before any, one more request per item
    than answered yet. The bar shows whole items and stays below the chunk's end until `advance`
    says its records are written, so it never counts an item whose record does not exist yet.
    """

    def __init__(self, total: int, desc: str, args: argparse.Namespace | None = None, unit: str = "item",
                 judges: Iterable[Any] = ()) -> None:
        self.bar = progress_bar(total, desc, args, unit)
        self.judges = [judge for judge in judges if judge is not None]
        for judge in self.judges:
            judge.on_batch = self.answered
        #: items shown as done (what the bar reads), items whose records are written, items scored now
        self.shown = self.done = self.chunk = 0
        #: requests answered in this chunk; requests and items of the finished chunks
        self.in_chunk = self.requests = self.items = 0

    def start(self, items: int) -> None:
        """A chunk of `items` goes to the method."""
        self.chunk, self.in_chunk = items, 0

    def answered(self, requests: int) -> None:
        """The judge answered a batch of `requests`: move by the chunk's share now answered."""
        self.in_chunk += requests
        expected = self.chunk * self.requests / self.items if self.requests else self.in_chunk + self.chunk
        within = min(int(self.chunk * self.in_chunk / expected), self.chunk - 1) if expected else 0
        self._show(self.done + max(within, 0))

    def advance(self, items: int) -> None:
        """The records of `items` items are written: the bar counts them, and the chunk's requests
        teach the expected requests per item of the next."""
        if self.in_chunk:
            self.requests += self.in_chunk
            self.items += items
        self.done += items
        self.chunk, self.in_chunk = 0, 0
        self._show(self.done)

    def _show(self, position: int) -> None:
        if position > self.shown:
            self.bar.update(position - self.shown)
            self.shown = position

    def close(self) -> None:
        """Stop listening to the judges and close the bar."""
        for judge in self.judges:
            judge.on_batch = None
        self.bar.close()

    def __enter__(self) -> "ItemProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
