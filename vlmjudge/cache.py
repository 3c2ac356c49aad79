"""A persistent response cache, so reruns make no model calls and killed runs resume.

SQLite in WAL mode: readers never block the single writer, and several processes can
share one file (each write is a short transaction, retried by SQLite's busy timeout; past
it, a run's answers are kept beside the file, `vlmjudge.cache_aside`, never lost).
Values are JSON. Keys come from `cache_key`, which covers everything that changes an
answer: backend, model, revision, dtype, the operation (with its options) and the
request's content hash. A file is only trusted so far: every value is checked against
its operation before it is served (`answer_problem`), and a damaged, locked or read-only
file is a `CacheFileError` that says what to do, never a traceback or a wrong score.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Sequence

from .cache_aside import AsideFileError, append_aside, aside_path, lock_holder, read_aside, take_aside

log = logging.getLogger(__name__)

_SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_SQLITE_MAX_VARS = 900
#: How far normalised option probabilities may sum from 1 (or raw ones above 1): float rounding only.
PROB_SUM_TOLERANCE = 1e-3
#: The fields of a stored text answer (`Answer.to_json`); failed answers ("error") are never stored.
_ANSWER_FIELDS = {"text", "finish_reason", "num_tokens"}
#: The fields of stored option probabilities (`vlmjudge.options.OptionProbs.to_json`).
_PROBS_FIELDS = {"probs", "mass", "bounds"}
#: After a write found the file locked, later writes go aside at once; the file is tried again after
#: this many seconds, the wait doubling up to the last (a run never stalls a minute per chunk).
_FIRST_RETRY_S, _LAST_RETRY_S = 1.0, 60.0
#: SQLite's primary result codes this module tells apart (`sqlite3.Error.sqlite_errorcode & 0xFF`).
_BUSY, _LOCKED, _READONLY, _CANTOPEN = 5, 6, 8, 14


def cache_key(identity: dict[str, Any], operation: str, request_hash: str,
              options: Sequence[str] | None = None) -> str:
    """The key of one response: the judge's identity, the operation and the request.

    Examples:
        >>> key = cache_key({"backend": "replay", "model": "m"}, "generate", "ab12")
        >>> len(key), key == cache_key({"model": "m", "backend": "replay"}, "generate", "ab12")
        (64, True)
        >>> key == cache_key({"backend": "replay", "model": "m"}, "choice_probs", "ab12", ["Yes", "No"])
        False
    """
    payload = {"judge": identity, "op": operation, "options": list(options) if options else None,
               "request": request_hash}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class CacheFileError(RuntimeError):
    """The response cache file exists but cannot be used: named, with how to recover.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "broken.sqlite")
        >>> _ = open(path, "w").write("not a database" * 100)
        >>> try:
        ...     ResponseCache(path)
        ... except CacheFileError as error:
        ...     print("cannot be read" in str(error), "mv " in str(error))
        True True
    """

    def __init__(self, path: str, cause: BaseException | str, message: str | None = None) -> None:
        self.path = path
        super().__init__(message or f"the response cache {path} cannot be read ({cause}); move it aside "
                         f"(mv {path} {path}.broken) or delete it and rerun, which starts a new cache, "
                         f"or rerun with --no-cache")


class CacheLockedError(CacheFileError):
    """Another process held the cache file's lock past the wait: who holds it, and what to do."""

    def __init__(self, path: str, holder: str, waited_s: float, kept: str | None = None) -> None:
        kept_note = f"; this run's answers so far are kept in {kept}, which the next run moves in" if kept else ""
        super().__init__(path, "locked", f"the response cache {path} is locked by {holder} (waited {waited_s:g} s)"
                         f"{kept_note}; wait for it to finish, point --cache at another file, or rerun with "
                         f"--no-cache")


class CacheReadOnlyError(CacheFileError):
    """The cache file cannot be written: its answers are good, so say how to use them, not to delete it."""

    def __init__(self, path: str, cause: BaseException | str) -> None:
        super().__init__(path, cause, f"the response cache {path} cannot be written ({cause}); its answers are "
                         f"intact: make it writable (chmod u+w {path}), or copy it to a writable place and pass "
                         f"the copy with --cache, or pass --cache another file, or rerun with --no-cache")


def answer_problem(op: str, value: Any, options: Sequence[str] | None = None) -> str | None:
    """Why a stored value cannot be the answer to an `op` request, or None when it can: the one
    check every backend's cached answers pass before they are served (a failing one is a miss).

    "generate" holds `Answer.to_json()` of a finished answer; "choice_probs" holds
    `OptionProbs.to_json()`: exactly the options, each a finite probability, summing to 1, the
    option mass (a probability, or null) and the bounds of unseen options; "choice_probs_raw"
    the same summing to at most 1 (full-vocabulary probabilities; all may be 0). A bare
    mapping of options (stored before the mass was) is refused: asked again.

    Examples:
        >>> answer_problem("choice_probs", {"probs": {"Yes": 0.25, "No": 0.75}, "mass": 0.9, "bounds": {}},
        ...                ["Yes", "No"]) is None
        True
        >>> answer_problem("choice_probs", {"Yes": 0.25, "No": 0.75}, ["Yes", "No"])
        "fields ['No', 'Yes'] are not ['bounds', 'mass', 'probs']"
        >>> answer_problem("choice_probs", {"probs": {"foo": 1}, "mass": None, "bounds": {}}, ["Yes", "No"])
        "keys ['foo'] are not the options ['Yes', 'No']"
        >>> answer_problem("choice_probs", {"probs": {"Yes": 7.5, "No": -6.5}, "mass": 1, "bounds": {}},
        ...                ["Yes", "No"])
        "'Yes' is 7.5, not a probability in [0, 1]"
        >>> answer_problem("choice_probs_raw", {"probs": {"Yes": 0.0, "No": 0.0}, "mass": 0.0, "bounds": {}},
        ...                ["Yes", "No"]) is None
        True
        >>> answer_problem("generate", {"text": "No", "finish_reason": "stop", "num_tokens": 1}) is None
        True
        >>> answer_problem("generate", {"text": None, "finish_reason": "stop", "num_tokens": 1})
        'text is NoneType, not a string'
    """
    if op == "generate":
        return _text_answer_problem(value)
    if op in ("choice_probs", "choice_probs_raw"):
        return _probs_problem(value, list(options or ()), normalised=op == "choice_probs")
    raise ValueError(f"no check for cached answers of operation {op!r}")


def _text_answer_problem(value: Any) -> str | None:
    """A finished answer's fields, exactly: a text, "stop" or "length", a token count."""
    if not isinstance(value, dict):
        return f"a {type(value).__name__}, not an answer object"
    if set(value) != _ANSWER_FIELDS:
        return f"fields {sorted(value)} are not {sorted(_ANSWER_FIELDS)}"
    if not isinstance(value["text"], str):
        return f"text is {type(value['text']).__name__}, not a string"
    if value["finish_reason"] not in ("stop", "length"):
        return f"finish_reason {value['finish_reason']!r} is not 'stop' or 'length'"
    count = value["num_tokens"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return f"num_tokens {count!r} is not a count"
    return None


def _probs_problem(stored: Any, options: list[str], normalised: bool) -> str | None:
    """`OptionProbs.to_json()`: exactly the options as keys, each a finite number in [0, 1], with
    the sum the operation gives; a mass in [0, 1] or null; bounds in [0, 1] on options only."""
    if not isinstance(stored, dict):
        return f"a {type(stored).__name__}, not option probabilities"
    if set(stored) != _PROBS_FIELDS:
        return f"fields {sorted(stored)} are not {sorted(_PROBS_FIELDS)}"
    mass, bounds, value = stored["mass"], stored["bounds"], stored["probs"]
    if mass is not None and not _is_probability(mass):
        return f"option mass {mass!r} is not a probability in [0, 1]"
    if not isinstance(bounds, dict) or not set(bounds) <= set(options) \
            or not all(_is_probability(b) for b in bounds.values()):
        return f"bounds {bounds!r} are not probabilities of options"
    if not isinstance(value, dict):
        return f"a {type(value).__name__}, not option probabilities"
    if len(value) != len(options) or set(value) != set(options):
        return f"keys {list(value)} are not the options {options}"
    for option, p in value.items():
        if not _is_probability(p):
            return f"{option!r} is {p!r}, not a probability in [0, 1]"
    total = sum(value.values())
    if normalised and abs(total - 1) > PROB_SUM_TOLERANCE:
        return f"probabilities sum to {total}, not 1"
    if not normalised and total > 1 + PROB_SUM_TOLERANCE:
        return f"probabilities sum to {total}, more than 1"
    return None


def _is_probability(p: Any) -> bool:
    """A finite number in [0, 1] (not a bool)."""
    return not isinstance(p, bool) and isinstance(p, (int, float)) and math.isfinite(p) and 0 <= p <= 1


class ResponseCache:
    """Key -> JSON value store on one SQLite file; safe across threads and processes.

    Args:
        path: the SQLite file, made with its folders when missing.
        timeout_s: how long to wait, in seconds, while another process holds the file locked.

    Examples:
        >>> import os, tempfile
        >>> cache = ResponseCache(os.path.join(tempfile.mkdtemp(), "answers.sqlite"))
        >>> cache.put_many([("k1", {"text": "No"})])
        >>> cache.get_many(["k1", "k2"])
        {'k1': {'text': 'No'}}
        >>> cache.close()
    """

    def __init__(self, path: str | os.PathLike, timeout_s: float = 60.0) -> None:
        self.path, self.timeout_s = os.fspath(path), timeout_s
        if os.path.isdir(self.path):
            raise CacheFileError(self.path, "a folder", f"the response cache {self.path} is a folder, not a "
                                 f"file: pass --cache a file's path, or rerun with --no-cache")
        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        except OSError as error:  # a file where a folder of the path should be, or no permission
            raise CacheFileError(self.path, error, f"the response cache {self.path} cannot be made ({error}); "
                                 f"pass --cache another file, or rerun with --no-cache") from None
        self._lock = threading.Lock()
        #: answers set aside while the file was locked, served until they are moved in (key -> JSON text)
        self._aside: dict[str, str] = {}
        #: while not None, the file was found locked: writes go aside until this time, then it is tried again
        self._retry_at: float | None = None
        self._retry_wait_s = _FIRST_RETRY_S
        self._warned = False  # the first answers set aside say so, once
        try:
            self._conn = sqlite3.connect(self.path, timeout=timeout_s, check_same_thread=False,
                                         isolation_level=None)
            self._prepare(timeout_s)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("SELECT key, value FROM responses LIMIT 1").fetchall()
            # Every page's structure, once per open (about 0.1 s per 100 MB): damage where this run's
            # keys never lead would otherwise go unnoticed until a later run, or a write, met it.
            verdict = self._conn.execute("PRAGMA quick_check(1)").fetchone()[0]
            self._check_writable()
        except sqlite3.DatabaseError as exc:  # not a database, a malformed one, or a foreign table
            raise self._named(exc) from None
        if verdict != "ok":
            raise CacheFileError(self.path, f"its pages are damaged: {' '.join(str(verdict).split())[:200]}")
        self._move_aside_in(wait_s=min(1.0, timeout_s))

    def _named(self, exc: sqlite3.DatabaseError) -> CacheFileError:
        """The `CacheFileError` an SQLite error means: locked (who holds it), read-only, unopenable or damaged."""
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if _is_locked(exc):
            return CacheLockedError(self.path, lock_holder(self.path), self.timeout_s,
                                    aside_path(self.path) if self._aside else None)
        if code == _READONLY or "readonly" in str(exc):
            return CacheReadOnlyError(self.path, exc)
        if code == _CANTOPEN:
            return CacheFileError(self.path, exc, f"the response cache {self.path} cannot be opened ({exc}): check "
                                  f"that it and its folder can be written, pass --cache another file, or rerun "
                                  f"with --no-cache")
        return CacheFileError(self.path, exc)

    def _check_writable(self) -> None:
        """Try a write that changes nothing, so a read-only file is refused now, before this run
        computes answers it could not keep; a file another process is writing passes (it is writable)."""
        self._conn.execute("PRAGMA busy_timeout = 0")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not _is_locked(exc):
                raise
            return
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
        try:
            self._conn.execute("INSERT INTO responses (key, value) SELECT '', '' WHERE 0")
        finally:
            self._conn.execute("ROLLBACK")

    def _prepare(self, timeout_s: float) -> None:
        """WAL mode and the table, retried while another process does the same: switching a
        fresh file to WAL answers "locked" at once, without waiting on SQLite's busy timeout."""
        deadline, delay = time.monotonic() + timeout_s, 0.01
        while True:
            try:
                if self._conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute(_SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(2 * delay, 0.5)

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        """Values for the keys that are present; absent keys are simply missing. A damaged page
        or a value that is no JSON (SQL NULL, JSON null, other text) is a `CacheFileError`:
        every writer stores JSON and never null, so the file itself was changed."""
        found: dict[str, Any] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock, self._errors_named():
            for start in range(0, len(unique), _SQLITE_MAX_VARS):
                chunk = unique[start:start + _SQLITE_MAX_VARS]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk)
                found.update((k, self._decoded(k, v)) for k, v in rows)
            found.update((k, self._decoded(k, self._aside[k])) for k in unique if k not in found and k in self._aside)
        return found

    def _decoded(self, key: str, text: Any) -> Any:
        """One stored value, or a `CacheFileError` naming its key when it is no JSON value."""
        try:
            value = json.loads(text) if isinstance(text, str) else None
        except (ValueError, RecursionError):  # not JSON, or nested past what json reads
            value = None
        if value is None:
            raise CacheFileError(self.path, f"the value stored under key {key[:12]}... is not a JSON answer")
        return value

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        """Store values in one transaction: a crash leaves either all of them or none. Values are
        JSON with non-ASCII escaped (a lone surrogate in a text still stores) and never null, NaN
        or Infinity (a ValueError names the key: the file stays standard JSON).

        When another process holds the file past `timeout_s` (SQLite retries with backoff that
        long), the values go to the aside file beside it (one warning line says where and who holds
        the lock) and are served from memory; later writes go aside at once until a retry, after 1 s
        doubling up to 60 s, finds the file free and moves them all in."""
        rows = [(k, _stored_text(k, v)) for k, v in items]
        if not rows:
            return
        with self._lock, self._errors_named():
            if self._retry_at is not None and time.monotonic() < self._retry_at:
                self._set_aside(rows)
                return
            wait_s = self.timeout_s if self._retry_at is None else min(1.0, self.timeout_s)
            try:
                self._write(rows, wait_s)
            except sqlite3.OperationalError as exc:
                if not _is_locked(exc):
                    raise
                self._set_aside(rows, waited_s=wait_s)
                return
            if self._retry_at is not None or self._aside:
                self._retry_at, self._retry_wait_s = None, _FIRST_RETRY_S
                self._move_aside_in(wait_s)

    def _write(self, rows: list[tuple[str, str]], wait_s: float) -> None:
        """One transaction of rows, waiting at most `wait_s` for another process's write lock."""
        self._conn.execute(f"PRAGMA busy_timeout = {int(wait_s * 1000)}")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
        try:
            self._conn.executemany("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", rows)
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _set_aside(self, rows: list[tuple[str, str]], waited_s: float | None = None) -> None:
        """Keep rows the locked file could not take in the aside file and in memory; a failed try
        (`waited_s`) schedules the next one, and the first says so in one line."""
        if waited_s is not None:
            self._retry_at = time.monotonic() + self._retry_wait_s
            self._retry_wait_s = min(2 * self._retry_wait_s, _LAST_RETRY_S)
        try:
            where = append_aside(self.path, rows)
        except OSError as error:  # nowhere to keep them: say so rather than lose them unsaid
            raise CacheFileError(self.path, error, f"the response cache {self.path} is locked by "
                                 f"{lock_holder(self.path)}, and its answers cannot be set aside ({error}); point "
                                 f"--cache at another file, or rerun with --no-cache") from None
        self._aside.update(rows)
        if not self._warned:
            self._warned = True
            waited = f" (waited {waited_s:g} s)" if waited_s is not None else ""
            log.warning("the response cache %s is locked by %s%s: this run's new answers go to %s, which the "
                        "next run that can write the cache moves in", self.path, lock_holder(self.path), waited, where)

    def _move_aside_in(self, wait_s: float) -> None:
        """Move the aside file's answers (this run's and earlier runs') into the file when it can be
        written within `wait_s`; else keep serving them from memory and go on setting answers aside."""
        try:
            moved, torn = take_aside(self.path, lambda rows: self._write(rows, wait_s))
        except AsideFileError as error:
            raise CacheFileError(self.path, error, str(error)) from None
        except sqlite3.OperationalError as exc:
            if not _is_locked(exc):
                raise
            rows, _ = read_aside(self.path)
            self._aside.update(rows)
            if self._retry_at is None:
                self._retry_at = time.monotonic() + self._retry_wait_s
            return
        self._aside.clear()
        if torn:  # a writer killed mid-append: that answer is asked again, the others are kept
            log.warning("%s: left out its last line, cut short by a writer that stopped mid-append",
                        aside_path(self.path))
        if moved:
            log.info("moved %d answers set aside while %s was locked into it", moved, self.path)

    def __len__(self) -> int:
        """The answers in the file (not those set aside while it was locked)."""
        with self._lock, self._errors_named():
            return self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    @contextmanager
    def _errors_named(self) -> Iterator[None]:
        """SQLite errors as the `CacheFileError` they mean (`_named`): a lock held past the wait, a
        read-only file, a malformed page or undecodable text."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise self._named(exc) from None

    def close(self) -> None:
        """Close the connection; a later use of this object fails."""
        with self._lock:
            self._conn.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle as a path, so a judge can travel to worker processes and reopen the file."""
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])


def _stored_text(key: str, value: Any) -> str:
    """The JSON text stored for one value; null, NaN and Infinity are refused (see `put_many`)."""
    if value is None:
        raise ValueError(f"cache key {key[:12]}...: None is not an answer (absent keys mean no answer)")
    try:
        return json.dumps(value, allow_nan=False)
    except ValueError:
        raise ValueError(f"cache key {key[:12]}...: the value holds NaN or Infinity: {value!r}") from None


def _is_locked(exc: sqlite3.Error) -> bool:
    """Whether an SQLite error says another connection holds the file (busy or locked), not damage."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    return code in (_BUSY, _LOCKED) or "locked" in str(exc)
