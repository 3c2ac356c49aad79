"""`vlmjudge benchmark` and `vlmjudge.benchmark(...)`: many text-to-image models, every method, one leaderboard.

The prompts come from `suites/` (named public sets and your own file); the models are image
folders or generators (`models`, `generation`); the methods share one judge and score each chunk
of images in turn (`methods`, `judging`); `runner` runs the phases, `writing` writes the runs and
benchmark.json, `api` is the Python face and `cli` the command. This package is callable:
`vlmjudge.benchmark(out=..., methods=..., ...)` is `api.benchmark`.
"""
from __future__ import annotations

import sys
import types
from typing import Any

from vlmjudge.lazy import lazy_exports

_EXPORTS = {
    "BenchmarkError": ".models", "BenchmarkPlan": ".runner", "BenchmarkResult": ".runner", "run_benchmark": ".runner",
    "read_benchmark_manifest": ".writing", "derive_seed": ".models",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


class _CallablePackage(types.ModuleType):
    """This package's module type: calling it runs `api.benchmark` (Python keeps one object per
    package name, so `vlmjudge.benchmark` cannot be a function and a package at once)."""

    def __call__(self, **kwargs: Any) -> Any:
        from .api import benchmark
        return benchmark(**kwargs)


sys.modules[__name__].__class__ = _CallablePackage
