"""Answers a locked response cache could not take, kept beside it, and who holds its lock.

When another process holds the cache file's write lock past the wait, a run's fresh answers go
to `<cache>.aside.jsonl` (one `{"key", "value"}` line each) instead of being lost; the next
`ResponseCache` that can write the file moves them in and removes the file. Appends and the
move take an exclusive `flock` on the aside file, so processes that share a cache never lose
each other's lines. The lock's holder is read from the kernel's lock table (`/proc/locks`,
Linux): the pid and command that hold a write lock on the file, its WAL or its shared memory.
"""
from __future__ import annotations

import contextlib
import json
import os
from typing import IO, Any, Iterator

#: What an aside file's name adds to its cache's.
ASIDE_SUFFIX = ".aside.jsonl"
#: The files SQLite locks for one database: the file itself, its WAL and its shared-memory index.
_LOCKED_FILES = ("", "-wal", "-shm")


def aside_path(cache_path: str) -> str:
    """Where the answers a locked cache could not take are kept: `<cache>.aside.jsonl`.

    Examples:
        >>> aside_path("runs/r.cache.sqlite")
        'runs/r.cache.sqlite.aside.jsonl'
    """
    return cache_path + ASIDE_SUFFIX


class AsideFileError(ValueError):
    """An aside file that holds a line no writer made: named with the line."""


@contextlib.contextmanager
def _locked(path: str, create: bool = True) -> Iterator[IO[str] | None]:
    """The aside file opened for reading and appending under an exclusive `flock` (created, or None
    when it does not exist and `create` is off); reopened when another process moved it away while
    this one waited for the lock."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock, so appends are safe within one process only
        fcntl = None
    while True:
        try:
            handle = open(path, "a+" if create else "r+", encoding="utf-8")
        except FileNotFoundError:
            if create:
                raise
            yield None
            return
        try:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_EX)
            if os.path.exists(path) and os.path.samestat(os.fstat(handle.fileno()), os.stat(path)):
                yield handle
                return
        finally:
            handle.close()  # closing lets go of the lock


def append_aside(cache_path: str, rows: list[tuple[str, str]]) -> str:
    """Append (key, JSON text) rows to the cache's aside file, flushed to disk; returns its path."""
    path = aside_path(cache_path)
    lines = "".join(f'{{"key": {json.dumps(key)}, "value": {text}}}\n' for key, text in rows)
    with _locked(path) as handle:
        handle.write(lines)
        handle.flush()
        os.fsync(handle.fileno())
    return path


def read_aside(cache_path: str) -> tuple[list[tuple[str, str]], int]:
    """The (key, JSON text) rows of the cache's aside file, and how many torn lines were left out
    (a last line without its newline: a writer killed mid-append). A whole line that is no
    `{"key", "value"}` object is an `AsideFileError` naming it."""
    path = aside_path(cache_path)
    with _locked(path, create=False) as handle:
        if handle is None:
            return [], 0
        handle.seek(0)
        return _parsed(handle.read(), path)


def take_aside(cache_path: str, store: Any) -> tuple[int, int]:
    """Hand every row of the aside file to `store(rows)` and remove the file once it returns, all
    under the file's lock (an append waits, then starts a new file); returns the rows moved and the
    torn lines left out. When `store` raises, the file stays as it was."""
    path = aside_path(cache_path)
    with _locked(path, create=False) as handle:
        if handle is None:
            return 0, 0
        handle.seek(0)
        rows, torn = _parsed(handle.read(), path)
        if rows:
            store(rows)
        os.unlink(path)
    return len(rows), torn


def _parsed(text: str, path: str) -> tuple[list[tuple[str, str]], int]:
    lines = text.split("\n")
    torn = 1 if lines[-1].strip() else 0  # the text after the last newline: an append cut short
    rows = []
    for number, line in enumerate(lines[:-1], 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            ok = isinstance(row, dict) and set(row) == {"key", "value"} and isinstance(row["key"], str) \
                and row["value"] is not None
            text = json.dumps(row["value"], allow_nan=False) if ok else ""
        except (ValueError, RecursionError):  # no JSON, NaN or Infinity in it, or nested past reading
            ok = False
        if not ok:
            raise AsideFileError(f"{path}:{number} is not an answer this library set aside; move the file "
                                 f"aside (mv {path} {path}.broken) and rerun")
        rows.append((row["key"], text))
    return rows, torn


def lock_holder(cache_path: str) -> str:
    """Who holds a write lock on the cache, in words: "pid 123 (python run.py)" per holder, from the
    kernel's lock table; what cannot be known is said as such.

    Examples:
        >>> import os, tempfile
        >>> lock_holder(os.path.join(tempfile.mkdtemp(), "unlocked.sqlite")).startswith("another")
        True
    """
    pids = _write_lockers(cache_path)
    if pids is None:
        return "another process (this system does not say which)"
    if not pids:
        return "another connection (no process holds a lock on it any more)"
    return ", ".join(f"pid {pid} ({_command(pid)})" for pid in pids)


def _write_lockers(cache_path: str) -> list[int] | None:
    """Pids other than this one holding a write lock on the cache's files; None without /proc/locks."""
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:  # not Linux, or /proc not mounted
        return None
    ids = set()
    for suffix in _LOCKED_FILES:
        try:
            stat = os.stat(cache_path + suffix)
        except OSError:  # a WAL or shared-memory file that does not exist (yet): nothing to lock
            continue
        ids.add((f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}", stat.st_ino))
    pids = []
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6:  # "->": a process waiting for the lock, not holding it
            continue
        kind, pid, where = fields[3], fields[4], fields[5].rsplit(":", 1)
        if kind == "WRITE" and len(where) == 2 and where[1].isdigit() and (where[0], int(where[1])) in ids \
                and pid.isdigit() and int(pid) != os.getpid() and int(pid) not in pids:
            pids.append(int(pid))
    return pids


def _command(pid: int) -> str:
    """A process's command line, each absolute path by its last part, cut at 100 characters;
    "command unknown" where it cannot be read."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = [os.fsdecode(w) for w in handle.read().split(b"\0") if w]
    except OSError:  # it ended meanwhile, or belongs to another user
        return "command unknown"
    text = " ".join(os.path.basename(w) if os.path.isabs(w) else w for w in words)
    text = text.encode("utf-8", "backslashreplace").decode() or "command unknown"
    return text if len(text) <= 100 else text[:97] + "..."
