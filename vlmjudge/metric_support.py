"""What every judge-backed `torchmetrics.Metric` needs: the judge kept out of the module
tree (shared by copies, never pickled), a batch of images read the same way, and a judge
given or loaded by name; and the input naming of the `evaluate` modules that score as they add."""
from __future__ import annotations

import functools
import os
import uuid
import weakref
from typing import Any, Callable, Mapping, Sequence

from .images import to_pil_list
from .judge import Judge, load_judge


class JudgeNotAttached(RuntimeError):
    """A metric was unpickled where its judge (or encoders) cannot be rebuilt from load arguments."""


#: Live handles by token, so that a metric unpickled in the process that pickled it shares the
#: very same scorer (and judge) instead of loading another model.
_LIVE: "weakref.WeakValueDictionary[str, ScorerHandle]" = weakref.WeakValueDictionary()


class ScorerHandle:
    """Holds a scorer (and its model) outside the module tree, so it never enters `state_dict`,
    `.to()` or an optimizer.

    Deep copies (`metric.clone()`, `MetricTracker.increment()`, Lightning) share it. Pickling
    never serialises the scorer, so no model weights and no live native handle (an xgrammar
    compiler, an SQLite connection) travel: a handle pickles as a token plus its recipes.
    Unpickled in a process where the original handle is alive, it is that handle (shared
    judge). Elsewhere `rebuild` (the metric's load arguments, e.g. `model=`) loads a judge on
    first use; a metric given a ready judge has no such recipe and raises `JudgeNotAttached`
    until `attach(judge)` gives it one (`rebind` turns a judge into a scorer with the metric's
    own options).
    """

    def __init__(self, scorer: Any, *, rebuild: Callable[[], Any] | None = None,
                 rebind: Callable[..., Any] | None = None,
                 reattach: str = "metric.attach_judge(judge)") -> None:
        self._scorer = scorer
        self.rebuild = rebuild
        self.rebind = rebind
        self.reattach = reattach  # how a user gives a detached metric its model back
        self.token = uuid.uuid4().hex
        _LIVE[self.token] = self

    @property
    def scorer(self) -> Any:
        """The scorer, rebuilt from the load arguments on first use after unpickling."""
        if self._scorer is None:
            if self.rebuild is None:
                raise JudgeNotAttached(
                    "this metric was unpickled in a process that does not hold its model, and it was given "
                    f"a ready one (not load arguments such as model=) that it cannot rebuild: call {self.reattach} "
                    "before using it")
            self._scorer = self.rebuild()
        return self._scorer

    @property
    def attached(self) -> bool:
        """Whether a scorer is held now (False only after unpickling, before first use)."""
        return self._scorer is not None

    def attach(self, *judges: Any) -> None:
        """Use `judges` from now on, with the metric's own scorer options."""
        if self.rebind is None:
            raise TypeError("this metric was built from a ready scorer, so it cannot rebuild one around a new "
                            "judge; construct the metric anew")
        self._scorer = self.rebind(*judges)

    def __deepcopy__(self, memo: dict) -> "ScorerHandle":
        return self

    def __reduce__(self) -> tuple:
        return _restore_handle, (self.token, self.rebuild, self.rebind, self.reattach)

    def __repr__(self) -> str:
        if self._scorer is None:
            return "ScorerHandle(detached)"
        judge = getattr(self._scorer, "judge", None)
        return f"ScorerHandle({getattr(judge, 'backend', '?')}:{getattr(judge, 'model_id', '?')})"


def _restore_handle(token: str, rebuild: Callable[[], Any] | None, rebind: Callable[..., Any] | None,
                    reattach: str) -> ScorerHandle:
    """The live handle of `token` in this process, or a detached one that rebuilds on first use."""
    live = _LIVE.get(token)
    if live is not None:
        return live
    handle = ScorerHandle.__new__(ScorerHandle)
    handle._scorer, handle.rebuild, handle.rebind = None, rebuild, rebind
    handle.reattach, handle.token = reattach, token
    _LIVE[token] = handle
    return handle


def scorer_handle(judge: Judge | None, model: str | None, backend: str, judge_kwargs: Mapping[str, Any] | None,
                  rebind: Callable[[Judge], Any]) -> ScorerHandle:
    """A handle on `rebind(judge)`, the judge given or loaded from `model`; a handle built from
    `model` can rebuild itself after unpickling (`rebind` must pickle: a module-level function
    or a `functools.partial` of one)."""
    loaded = judge_or_load(judge, model, backend, judge_kwargs)
    rebuild = None
    if judge is None:
        rebuild = functools.partial(_load_and_bind, rebind, model, backend, dict(judge_kwargs or {}))
    return ScorerHandle(rebind(loaded), rebuild=rebuild, rebind=rebind)


def _load_and_bind(rebind: Callable[[Judge], Any], model: str, backend: str,
                   judge_kwargs: Mapping[str, Any]) -> Any:
    return rebind(load_judge(model, backend=backend, **dict(judge_kwargs)))


def image_batch(images: Any, who: str = "update") -> list:
    """A batch as RGB PIL images: a BCHW tensor (uint8 0..255 or float 0..1) or a sequence of any
    image inputs; a single image is an error, never silently a batch of rows."""
    import torch
    if isinstance(images, torch.Tensor):
        if images.dim() != 4 or images.shape[1] not in (1, 3, 4):
            raise ValueError(f"{who} takes a BCHW batch tensor (B, C, H, W) with C in 1, 3, 4; "
                             f"got shape {tuple(images.shape)}")
        if images.shape[0] == 0:
            raise ValueError("empty image batch")
        return to_pil_list(images)
    if isinstance(images, (str, bytes, os.PathLike)) or hasattr(images, "convert") \
            or not isinstance(images, Sequence):
        raise TypeError("images must be a BCHW tensor or a list of images (wrap a single image in a list), "
                        f"got {type(images).__name__}")
    if len(images) == 0:
        raise ValueError("empty image batch")
    return to_pil_list(list(images))


def judge_or_load(judge: Judge | None, model: str | None, backend: str,
                  judge_kwargs: Mapping[str, Any] | None) -> Judge:
    """The given judge, or one loaded from `model`; exactly one of the two."""
    if judge is None:
        if model is None:
            raise ValueError("give a judge (vlmjudge.load_judge(...)) or model=<Hub id or local dir>")
        return load_judge(model, backend=backend, **dict(judge_kwargs or {}))
    if model is not None:
        raise ValueError("give either a judge or model=, not both")
    return judge


class ScoredRowsModule:
    """Mixin for an `evaluate` module that scores as it adds and stores scored rows (see
    `vlmjudge.distributed.store_scored_rows`), placed before `evaluate.Metric` in the bases.

    `_feature_names()` names the module's inputs, as evaluate expects: `evaluate.combine`
    routes each module its inputs by these names. Only while `compute_stored` aggregates does
    it name the stored columns instead, because evaluate's `compute` reads back the columns
    `_feature_names()` names. `stored_features()` gives those columns (None: the module
    stores its raw inputs, as a plain evaluate module does).
    """

    _reading_stored = False

    def stored_features(self) -> Any:
        raise NotImplementedError

    def _feature_names(self) -> list[str]:
        stored = self.stored_features() if self._reading_stored else None
        return list(stored) if stored is not None else super()._feature_names()  # type: ignore[misc]

    def compute_stored(self, **compute_kwargs: Any) -> Any:
        """evaluate's `compute` over the stored rows (every process's), with `compute_kwargs`
        passed on to `_compute`."""
        self._reading_stored = True
        try:
            return super().compute(**compute_kwargs)  # type: ignore[misc]
        finally:
            self._reading_stored = False
