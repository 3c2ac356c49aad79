"""What a loaded checkpoint is, by content: the part of the cache identity that cannot go stale.

A local folder is identified by a digest of the files that shape answers (weights, configs, tokenizer,
processor and chat template), so a judge saved over the old one in the same folder never reads the old
one's answers, and a copy of a checkpoint (another path, another node) still resumes from the same cache.
A Hub id is identified by the commit it resolved to. Hashing gigabytes of weights on every load would be
slow, so each file's digest is memoised by (path, size, mtime): it is recomputed only when those change.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

#: Files whose content changes a model's answers; anything else in a checkpoint folder is ignored.
ANSWER_SHAPING_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".json", ".jinja", ".model",
                           ".tiktoken", ".txt", ".py")
IGNORED_NAMES = ("README", "LICENSE", "NOTICE", ".git")
_CHUNK = 1 << 22


def digest_home() -> Path:
    """Where the per-file digest memo lives: $VLMJUDGE_HOME, else ~/.cache/vlmjudge."""
    return Path(os.environ.get("VLMJUDGE_HOME") or Path.home() / ".cache" / "vlmjudge")


def answer_shaping_files(folder: Path) -> list[Path]:
    """The checkpoint's files that shape answers, in a stable order (relative path)."""
    found = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and path.suffix in ANSWER_SHAPING_SUFFIXES and \
                not any(part.startswith(IGNORED_NAMES) for part in rel.parts):
            found.append(path)
    return found


class _DigestMemo:
    """sha256 per (resolved path, size, mtime_ns), in one SQLite file shared by processes."""

    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(home / "file-digests.sqlite"), timeout=30, isolation_level=None)
        self._conn.execute("CREATE TABLE IF NOT EXISTS digests (path TEXT, size INTEGER, mtime INTEGER, "
                           "sha256 TEXT, PRIMARY KEY (path, size, mtime))")

    def digest(self, path: Path) -> str:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        row = self._conn.execute("SELECT sha256 FROM digests WHERE path=? AND size=? AND mtime=?", key).fetchone()
        if row:
            return row[0]
        sha = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(_CHUNK), b""):
                sha.update(block)
        value = sha.hexdigest()
        self._conn.execute("DELETE FROM digests WHERE path=?", key[:1])
        self._conn.execute("INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?)", (*key, value))
        return value

    def close(self) -> None:
        self._conn.close()


def folder_digest(folder: str | os.PathLike) -> str:
    """One digest over the answer-shaping files of a checkpoint folder (names and contents)."""
    folder = Path(folder)
    files = answer_shaping_files(folder)
    if not files:
        raise FileNotFoundError(f"{folder} holds no checkpoint files to identify it by")
    memo = _DigestMemo(digest_home())
    try:
        listing = [[str(path.relative_to(folder)), memo.digest(path)] for path in files]
    finally:
        memo.close()
    return hashlib.sha256(json.dumps(listing).encode()).hexdigest()


def processor_options_digest(processor: Any) -> str:
    """A digest of the processor's settings as loaded (an option set in code changes the identity too)."""
    settings = {}
    for part in ("image_processor", "video_processor"):
        component = getattr(processor, part, None)
        if component is not None and hasattr(component, "to_dict"):
            settings[part] = component.to_dict()
    settings["chat_template"] = getattr(processor, "chat_template", None)
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def checkpoint_identity(model_id: str, commit: str | None) -> str:
    """`sha256:<folder digest>` for a local folder, `hub:<commit>` for a resolved Hub id.

    A Hub id whose commit did not resolve keeps its name and revision, with a warning: its cached
    answers would go stale if the repository moved on.
    """
    if os.path.isdir(model_id):
        return f"sha256:{folder_digest(model_id)}"
    if commit:
        return f"hub:{commit}"
    import warnings
    warnings.warn(f"the Hub commit of {model_id!r} did not resolve: cached answers are keyed by its name, "
                  "which can go stale if the repository changes; pass revision=<commit sha>", stacklevel=3)
    return f"name:{model_id}"
