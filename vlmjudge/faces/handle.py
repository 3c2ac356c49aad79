"""Judges and encoders kept out of a Metric's module tree: shared by copies, never pickled.

A `ScorerHandle` holds the scorer (a method class over a judge, or a pair of encoders); deep
copies share it and a pickle carries only a token and the recipe to rebuild it.
"""
from __future__ import annotations

import functools
import uuid
import weakref
from typing import Any, Callable

from .loading import JudgeRecipe, judge_or_load, judge_recipe


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


def scorer_handle(judge: Any, rebind: Callable[[Any], Any], *, default_model: str | None = None,
                  where: str = "the metric", **judge_arguments: Any) -> ScorerHandle:
    """A handle on `rebind(judge)`: the judge given, or one loaded from the judge arguments
    (`model`, `backend`, `revision`, `device`, `dtype`, `cache`, `judge_kwargs`; `model`
    defaults to the method's `default_model`). A handle built from arguments rebuilds itself
    after unpickling elsewhere (`rebind` must pickle: a module-level function or a
    `functools.partial` of one); one given a ready judge needs `attach` there.

    Examples:
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> handle = scorer_handle(ReplayJudge({}), lambda judge: ("scorer", judge))
        >>> handle.scorer[0], handle.attached
        ('scorer', True)
        >>> import copy
        >>> copy.deepcopy(handle) is handle
        True
    """
    if judge is not None:
        judge_or_load(judge, default_model, where=where, **judge_arguments)  # no load arguments beside a judge
        return ScorerHandle(rebind(judge), rebind=rebind)
    recipe = judge_recipe(default_model, where=where, **judge_arguments)
    return ScorerHandle(rebind(recipe.load()), rebuild=functools.partial(_load_and_bind, rebind, recipe),
                        rebind=rebind)


def _load_and_bind(rebind: Callable[[Any], Any], recipe: JudgeRecipe) -> Any:
    return rebind(recipe.load())
