"""A persistent response cache, so reruns make no model calls and killed runs resume.

SQLite in WAL mode: readers never block the single writer, and several processes can
share one file (each write is a short transaction, retried by SQLite's busy timeout).
Values are JSON. Keys come from `cache_key`, which covers everything that changes an
answer: backend, model, revision, dtype, the operation (with its options) and the
request's content hash.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from typing import Any, Iterable, Sequence

_SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_SQLITE_MAX_VARS = 900


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

    def __init__(self, path: str, cause: BaseException) -> None:
        self.path = path
        super().__init__(f"the response cache {path} cannot be read ({cause}); move it aside "
                         f"(mv {path} {path}.broken) and rerun: the run then starts a new cache")


class ResponseCache:
    """Key -> JSON value store on one SQLite file; safe across threads and processes.

    Examples:
        >>> import os, tempfile
        >>> cache = ResponseCache(os.path.join(tempfile.mkdtemp(), "answers.sqlite"))
        >>> cache.put_many([("k1", {"text": "No"})])
        >>> cache.get_many(["k1", "k2"])
        {'k1': {'text': 'No'}}
        >>> cache.close()
    """

    def __init__(self, path: str | os.PathLike, timeout_s: float = 60.0) -> None:
        self.path = os.fspath(path)
        parent = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(parent, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(self.path, timeout=timeout_s, check_same_thread=False,
                                         isolation_level=None)
            self._prepare(timeout_s)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("SELECT key, value FROM responses LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:  # not a database, a malformed one, or a foreign table
            if "locked" in str(exc):  # busy, not broken: another process holds it past the timeout
                raise
            raise CacheFileError(self.path, exc) from None

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
        """Values for the keys that are present; absent keys are simply missing."""
        found: dict[str, Any] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), _SQLITE_MAX_VARS):
                chunk = unique[start:start + _SQLITE_MAX_VARS]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk)
                found.update((k, json.loads(v)) for k, v in rows)
        return found

    def put_many(self, items: Iterable[tuple[str, Any]]) -> None:
        """Store values in one transaction: a crash leaves either all of them or none."""
        rows = [(k, json.dumps(v, ensure_ascii=False)) for k, v in items]
        if not rows:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", rows)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle as a path, so a judge can travel to worker processes and reopen the file."""
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])
