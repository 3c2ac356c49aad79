"""vlmjudge: multimodal-LLM judges for text-to-image evaluation, behind one judge interface.

The core imports no method package and nothing heavy at import time, so `import vlmjudge`
works where optional libraries (evaluate, datasets, xgrammar) are missing.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Request": "vlmjudge.requests", "Answer": "vlmjudge.requests", "Decoding": "vlmjudge.requests",
    "Constraint": "vlmjudge.requests", "Judge": "vlmjudge.judge", "JudgeError": "vlmjudge.judge",
    "load_judge": "vlmjudge.judge", "ResponseCache": "vlmjudge.cache", "MethodSpec": "vlmjudge.registry",
    "get_method": "vlmjudge.registry", "list_methods": "vlmjudge.registry", "to_pil": "vlmjudge.images",
    "to_pil_list": "vlmjudge.images", "ImageInputError": "vlmjudge.images", "compare": "vlmjudge.cli.compare",
}

#: Sub-packages that are also called: `vlmjudge.benchmark(...)` runs a benchmark, and
#: `vlmjudge.benchmark.suites` is still its sub-package (the package itself is callable).
_CALLABLE_PACKAGES = {"benchmark": "vlmjudge.benchmark"}

__all__ = ["__version__", *_EXPORTS, *_CALLABLE_PACKAGES]


def __getattr__(name: str) -> Any:
    """Resolve public names on first use, keeping `import vlmjudge` light."""
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    if name in _CALLABLE_PACKAGES:
        return import_module(_CALLABLE_PACKAGES[name])
    raise AttributeError(f"module 'vlmjudge' has no attribute {name!r}")
