"""The one way every face (Metric, evaluate module, app, CLI, panel, distributed runner) gets
its judge: a ready judge, or one loaded from the same six arguments, `model`, `backend`,
`revision`, `device`, `dtype` and `cache`.

The no-model rule is the same everywhere: when no model is given, the method's default model
(`MethodSpec.default_model`) is loaded; a method without one asks for `model=`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

#: The judge arguments of every face, in this order.
JUDGE_ARGUMENTS = ("model", "backend", "revision", "device", "dtype", "cache")

DEFAULT_BACKEND = "transformers"


def resolve_model(model: Any, default_model: str | None, where: str = "the judge") -> Any:
    """`model`, or the method's default model when none is given; an error when neither exists.

    Examples:
        >>> resolve_model(None, "org/default-vlm")
        'org/default-vlm'
        >>> resolve_model("my/vlm", "org/default-vlm")
        'my/vlm'
    """
    if model is not None:
        return model
    if default_model is None:
        raise ValueError(f"{where}: give model= (a Hub id, a local folder or a server model name); "
                         "this method has no default model")
    return default_model


@dataclass(frozen=True)
class JudgeRecipe:
    """What `load_judge` is called with: the six judge arguments plus backend-only extras
    (`batch_size`, `base_url`, `key_fields`, ...). Picklable, so a metric or a worker process
    can load the same judge again where the first one is not.

    Examples:
        >>> JudgeRecipe("my/vlm", device="cpu", extra={"batch_size": 4}).load_kwargs()
        {'device': 'cpu', 'batch_size': 4}
    """

    model: Any
    backend: str = DEFAULT_BACKEND
    revision: str | None = None
    device: str | None = None
    dtype: str | None = None
    cache: Any = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def load_kwargs(self) -> dict[str, Any]:
        """The keyword arguments `load_judge(model, backend=...)` gets (unset ones left out)."""
        given = {"revision": self.revision, "device": self.device, "dtype": self.dtype, "cache": self.cache}
        return {**{k: v for k, v in given.items() if v is not None}, **dict(self.extra)}

    def load(self) -> Any:
        """Load the judge."""
        from ..judge import load_judge
        return load_judge(self.model, backend=self.backend, **self.load_kwargs())


def judge_recipe(default_model: str | None = None, *, model: Any = None, backend: str | None = None,
                 revision: str | None = None, device: str | None = None, dtype: str | None = None,
                 cache: Any = None, judge_kwargs: Mapping[str, Any] | None = None,
                 where: str = "the judge") -> JudgeRecipe:
    """The recipe of the judge a face loads: `model` (or the method's `default_model`) and the
    other judge arguments; `judge_kwargs` carries backend-only extras and may also name any of
    the six (an argument given both ways is an error)."""
    extra = dict(judge_kwargs or {})
    named = {"model": model, "backend": backend, "revision": revision, "device": device, "dtype": dtype,
             "cache": cache}
    for name in JUDGE_ARGUMENTS:
        if name in extra:
            if named[name] is not None:
                raise TypeError(f"{where}: {name}= given twice (directly and in judge_kwargs)")
            named[name] = extra.pop(name)
    named["model"] = resolve_model(named["model"], default_model, where)
    named["backend"] = named["backend"] or DEFAULT_BACKEND
    return JudgeRecipe(extra=extra, **named)


def load_method_judge(default_model: str | None = None, **arguments: Any) -> Any:
    """Load a judge from the judge arguments (`judge_recipe`'s), the method's default model
    when `model` is None."""
    return judge_recipe(default_model, **arguments).load()


def judge_or_load(judge: Any, default_model: str | None = None, **arguments: Any) -> Any:
    """The given judge, or one loaded from the judge arguments (`model` defaulting to the
    method's default model); a judge together with load arguments is an error."""
    if judge is None:
        return load_method_judge(default_model, **arguments)
    given = sorted(k for k, v in arguments.items() if v not in (None, {}) and k not in ("where", "backend"))
    if given:
        raise ValueError(f"{arguments.get('where', 'the judge')}: give either judge= (a loaded judge) or the "
                         f"arguments to load one ({', '.join(given)}), not both")
    return judge
