"""One base for each face of a method: the judge loader every face uses (`loading`), the
judge-metric base for torchmetrics (`metric`, with `ScorerHandle` from `handle`), and the
score-on-add base of the `evaluate` modules (`module`).

Light to import: the torch-backed names load on first use.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from .handle import JudgeNotAttached, ScorerHandle, scorer_handle
from .loading import (JUDGE_ARGUMENTS, JudgeRecipe,
                      judge_or_load, judge_recipe, load_method_judge, resolve_model)
from .module import ScoredModule, ScoredRowsModule, store_scored_rows

_LAZY = {"JudgeMetric": "metric", "State": "metric", "batch_value": "metric", "image_batch": "metric"}

__all__ = ["JUDGE_ARGUMENTS", "JudgeNotAttached", "JudgeRecipe", "ScorerHandle",
           "ScoredModule", "ScoredRowsModule", "judge_or_load", "judge_recipe", "load_method_judge",
           "resolve_model", "scorer_handle", "store_scored_rows", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
