"""Install a locally built checkpoint into a Hugging Face Hub cache, so tests load it by Hub id offline.

It writes the layout `huggingface_hub` reads (`models--org--name/` with `blobs/`, `snapshots/`
and `refs/main`), so `from_pretrained(..., revision=...)` resolves offline. huggingface_hub reads
`HF_HOME`/`HF_HUB_CACHE` once, at import; docs/testing.md says how to point this installer and the
loaders at the same cache. Without `cache_dir` it writes where this process's loaders look.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import uuid
from pathlib import Path

__all__ = ["blob_etag", "install_in_hf_cache"]

_COMMIT_RE = re.compile(r"[0-9a-f]{40}")
_REPO_TYPES = ("model", "dataset", "space")
# suffixes the Hub's default .gitattributes sends to LFS (their etag is a sha256)
_LFS_SUFFIXES = frozenset(
    ".safetensors .bin .pt .pth .ckpt .h5 .msgpack .onnx .model .tflite .npy .npz .pkl .pickle "
    ".arrow .parquet .zip .gz .tar .tgz .xz .zst .7z .joblib .ot .mlmodel .gguf".split()
)
_LFS_MIN_BYTES = 10 * 1024 * 1024
_SKIP_DIRS = frozenset({".git", ".cache", "__pycache__"})


def install_in_hf_cache(
    src_dir: str | os.PathLike,
    repo_id: str = "org/name",
    *,
    cache_dir: str | os.PathLike | None = None,
    revision: str | None = None,
    repo_type: str = "model",
) -> str:
    """Copy ``src_dir`` into the Hub cache as ``repo_id`` at a content-derived fake commit; return that commit.

    ``revision`` is the ref that will point at the commit (default ``"main"``);
    a 40-hex ``revision`` is used as the commit itself and ``refs/main`` points at it.
    """
    src = Path(src_dir)
    files = _files_under(src)
    if not files:
        raise ValueError(f"nothing to install: {src} has no files")
    _check_repo_id(repo_id)
    if repo_type not in _REPO_TYPES:
        raise ValueError(f"repo_type must be one of {_REPO_TYPES}, got {repo_type!r}")

    cache = Path(cache_dir) if cache_dir is not None else Path(_default_cache())
    storage = cache / "--".join([f"{repo_type}s", *repo_id.split("/")])
    etags = {rel: blob_etag(src / rel) for rel in files}

    if revision is not None and _COMMIT_RE.fullmatch(revision):
        commit, ref = revision, "main"
    else:
        commit, ref = _fake_commit(etags), revision or "main"
    _check_ref(ref)

    blobs = storage / "blobs"
    snapshot = storage / "snapshots" / commit
    blobs.mkdir(parents=True, exist_ok=True)
    for rel, etag in etags.items():
        blob = blobs / etag
        if not blob.exists():
            _atomic_copy(src / rel, blob)
        _link(blob, snapshot / rel)
    _atomic_write(storage / "refs" / ref, commit)
    return commit


def blob_etag(path: str | os.PathLike) -> str:
    """Name a file's blob the way the Hub does: sha256 for LFS files, git blob sha1 for the rest."""
    p = Path(path)
    size = p.stat().st_size
    if p.suffix.lower() in _LFS_SUFFIXES or size >= _LFS_MIN_BYTES:
        digest = hashlib.sha256()
    else:
        digest = hashlib.sha1()
        digest.update(b"blob %d\0" % size)
    with p.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# ---------------------------------------------------------------------------


def _default_cache() -> str:
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def _files_under(src: Path) -> list[str]:
    if not src.is_dir():
        raise ValueError(f"not a folder: {src}")
    found = []
    for root, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            found.append((Path(root) / name).relative_to(src).as_posix())
    return found


def _check_repo_id(repo_id: str) -> None:
    parts = repo_id.split("/") if isinstance(repo_id, str) else []
    ok = len(parts) in (1, 2) and all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", p) for p in parts)
    if not ok or "--" in repo_id or ".." in repo_id:
        raise ValueError(f"not a Hub repo id: {repo_id!r} (expected 'org/name')")


def _check_ref(ref: str) -> None:
    parts = ref.split("/")
    if not ref or any(p in ("", ".", "..") for p in parts) or "\\" in ref:
        raise ValueError(f"not a usable revision name: {ref!r}")


def _fake_commit(etags: dict[str, str]) -> str:
    h = hashlib.sha1(b"vlmjudge fake commit\n")
    for rel in sorted(etags):
        h.update(f"{rel}\0{etags[rel]}\n".encode())
    return h.hexdigest()


def _atomic_copy(src: Path, dst: Path) -> None:
    tmp = dst.with_name(f"{dst.name}.{uuid.uuid4().hex[:8]}.incomplete")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _link(blob: Path, pointer: Path) -> None:
    """Relative symlink from the snapshot to the blob, as huggingface_hub makes; a copy where links fail."""
    pointer.parent.mkdir(parents=True, exist_ok=True)
    if pointer.is_symlink() or pointer.exists():
        pointer.unlink()
    target = os.path.relpath(blob, pointer.parent)
    try:
        os.symlink(target, pointer)
    except OSError:  # no symlink support (e.g. Windows without developer mode): huggingface_hub copies too
        shutil.copyfile(blob, pointer)
