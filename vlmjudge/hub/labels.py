"""The labels file of `vlmjudge annotate`: checked before the app starts, then appended one whole
line per label, and never twice for one item and annotator.

Several tabs, and several `vlmjudge annotate` processes, may share one file. Each write takes an
exclusive lock on it (`flock`, on systems that have it), reads it again, refuses a label its
annotator already gave (`AlreadyLabelled`: a stale tab) and appends the line in one write, after a
newline when the last line lacks one. A file the app cannot safely append to (a folder, a line that
is not this method's label, a place it cannot write) is refused at start (`AnnotationSetupError`).
"""
from __future__ import annotations

import json
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, Mapping

from ..outputs import JsonlError, parse_jsonl_lines

try:
    import fcntl
except ImportError:  # not POSIX: the lock below holds within this process only (docs/annotate.md)
    fcntl = None

#: What every line of a labels file holds, as text: what the app resumes by and never repeats.
LABEL_KEYS = ("id", "annotator", "method")


class AnnotationSetupError(ValueError):
    """What keeps the labelling app from starting (a bad --out, --images, --items or method): one
    line a person fixes; `vlmjudge annotate` prints it and exits 2."""


class AlreadyLabelled(Exception):
    """A label of an item its annotator has labelled already (in another tab or process): not written."""

    def __init__(self, item_id: str, annotator: str) -> None:
        self.item_id, self.annotator = item_id, annotator
        super().__init__(f"{item_id!r} is already labelled by {annotator!r}")


def label_problem(line: Mapping[str, Any], method: str) -> str | None:
    """Why a line cannot stand in `method`'s labels file, or None when it can.

    Examples:
        >>> label_problem({"id": "a.png", "annotator": "ann", "method": "fager"}, "fager") is None
        True
        >>> label_problem({"id": "a.png", "status": "scored", "score": 0.5}, "fager")
        "not a label of the annotation app (no text 'annotator'); is this a labels file?"
        >>> label_problem({"id": "a.png", "annotator": "ann", "method": "terravis"}, "fager")
        "a terravis label, not fager: give each method's labels their own file"
    """
    for key in LABEL_KEYS:
        if not isinstance(line.get(key), str) or not line[key]:
            return f"not a label of the annotation app (no text {key!r}); is this a labels file?"
    if line["method"] != method:
        return f"a {line['method']} label, not {method}: give each method's labels their own file"
    return None


@contextmanager
def _locked(handle: IO[bytes], exclusive: bool) -> Iterator[None]:
    """Hold the file's lock (exclusive to write, shared to read) across processes where flock exists."""
    if fcntl is not None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def check_out(path: Path) -> None:
    """Refuse, before anything is served, a labels path the app could not append to."""
    shown = os.fspath(path)
    if path.is_dir():
        raise AnnotationSetupError(f"--out {shown!r} is a folder: name a .jsonl file")
    if path.exists():
        if not path.is_file():
            raise AnnotationSetupError(f"--out {shown!r} is not a regular file")
        try:
            open(path, "ab").close()  # opening to append writes nothing
        except OSError as error:
            raise AnnotationSetupError(f"cannot append to --out {shown!r}: {error.strerror}") from None
        return
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise AnnotationSetupError(f"cannot create --out {shown!r}: {os.fspath(parent)!r} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise AnnotationSetupError(f"cannot create --out {shown!r}: {os.fspath(parent)!r} is not writable")


class LabelStore:
    """One method's labels file: checked whole at construction (`AnnotationSetupError`), read to
    resume each annotator, appended one line per submit under the file lock."""

    def __init__(self, path: str | os.PathLike, method: str) -> None:
        self.path, self.method = Path(path), method
        self._lock = threading.Lock()  # flock also separates threads; this covers systems without it
        check_out(self.path)
        self.done()

    def _parse(self, data: bytes) -> dict[str, set[str]]:
        """Annotator -> item ids labelled, from the file's bytes; any line that is not one of this
        method's labels is an `AnnotationSetupError` naming the file and line."""
        shown = os.fspath(self.path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise AnnotationSetupError(f"{shown}: not UTF-8 text (byte {error.start}); "
                                       "is this a labels file?") from None
        done: dict[str, set[str]] = {}
        try:  # split on newlines only: a label's text may hold other line breaks (U+2028) unescaped
            for number, line in parse_jsonl_lines(text.split("\n"), shown):
                problem = label_problem(line, self.method)
                if problem:
                    raise AnnotationSetupError(f"{shown}:{number}: {problem}")
                done.setdefault(line["annotator"], set()).add(line["id"])
        except JsonlError as error:
            raise AnnotationSetupError(f"{error}; is this a labels file?") from None
        return done

    def done(self) -> dict[str, set[str]]:
        """Annotator -> the item ids they labelled, read now (other tabs and processes write too)."""
        try:
            with open(self.path, "rb") as handle, _locked(handle, exclusive=False):
                return self._parse(handle.read())
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise AnnotationSetupError(f"cannot read --out {os.fspath(self.path)!r}: {error.strerror}") from None

    def labelled(self, annotator: str) -> set[str]:
        """The item ids this annotator has labelled."""
        return self.done().get(annotator, set())

    def add(self, label: Mapping[str, Any]) -> None:
        """Append one label as one line, on disk before returning; `AlreadyLabelled` (and nothing
        written) when the file, read again under the lock, has this item from this annotator."""
        problem = label_problem(label, self.method)
        if problem:
            raise ValueError(problem)
        line = (json.dumps(dict(label), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a+b", buffering=0) as handle, _locked(handle, exclusive=True):
                handle.seek(0)
                data = handle.read()
                if label["id"] in self._parse(data).get(label["annotator"], ()):
                    raise AlreadyLabelled(label["id"], label["annotator"])
                if data and not data.endswith(b"\n"):  # a last line without its newline stays whole
                    line = b"\n" + line
                while line:  # O_APPEND: each write lands at the end, whatever was read
                    line = line[handle.write(line):]
                os.fsync(handle.fileno())
