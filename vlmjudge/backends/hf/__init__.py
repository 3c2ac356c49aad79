"""The in-process transformers backend (`load_judge(..., backend="transformers")`).

The judge and what it needs around it (loading, checkpoint identity, token memo, batch
planning) sit here; `prefix/` shares prompt prefixes and keeps KV rows and vision outputs
across calls, `decoding/` constrains and closes generated answers. The judge itself is
`vlmjudge.backends.hf.judge.TransformersJudge`. The package's public names (the judge, and
`image_tokens`: visual tokens per image size as its prefill counts them, for tools outside the
engine such as bench/) load on first use, so loading one room does not load the others.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {"TransformersJudge": "vlmjudge.backends.hf.judge", "image_tokens": "vlmjudge.backends.hf.batching"}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Resolve a public name on first use, keeping `import vlmjudge.backends.hf` light."""
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'vlmjudge.backends.hf' has no attribute {name!r}")
