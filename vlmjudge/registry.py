"""The method interface (`MethodSpec`) and the registry of installed methods.

Methods register through the `vlmjudge.methods` entry-point group, so the CLI, the
demo builder and the integrations find them without the core importing any method
package. `register()` adds one at run time (tests, notebooks).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from .annotation import AnnotationProtocol
    from .stats.human_sets.protocol import HumanProtocol
    from .stats.statistic import Statistic

ENTRY_POINT_GROUP = "vlmjudge.methods"
COMMAND_GROUP = "vlmjudge.commands"

#: The judge the VLM methods name as their `default_model` (what runs when no model is given).
DEFAULT_JUDGE_MODEL = "Qwen/Qwen3-VL-8B-Instruct"

R = TypeVar("R", bound=Callable[[Any], dict[str, Any]])


@runtime_checkable
class ScoreRecord(Protocol):
    """One scored item: `score` is None exactly when the item could not be scored."""

    score: float | None
    valid: bool

    def to_json(self) -> dict[str, Any]: ...


@runtime_checkable
class Scorer(Protocol):
    """What `MethodSpec.build` returns: scores a batch given as columns of equal length."""

    def score_batch(self, batch: Mapping[str, Sequence[Any]]) -> list[ScoreRecord]: ...


@dataclass(frozen=True)
class LinearScale:
    """A score range mapped linearly onto [0, 1]: a spec's `normalize` unless it gives its own
    (a dataclass, not a closure, so that specs pickle).

    Examples:
        >>> LinearScale(0.0, 10.0)(7.5), LinearScale(0.0, 1.0)(0.3), LinearScale(-1.0, 1.0)(0.0)
        (0.75, 0.3, 0.5)
    """

    low: float
    high: float

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"a score range runs from low to high, got ({self.low}, {self.high})")

    def __call__(self, score: float) -> float:
        return (score - self.low) / (self.high - self.low)


def renders(method: str, record_type: type) -> Callable[[R], R]:
    """Decorates a spec's `render` so that any other record is refused with a TypeError that
    names the method and the record type it renders.

    Examples:
        >>> @renders("toy", dict)
        ... def render(record):
        ...     return {"score_text": str(record["score"]), "markdown": ""}
        >>> render({"score": 1})["score_text"]
        '1'
        >>> render([1])
        Traceback (most recent call last):
        ...
        TypeError: toy renders dict objects, got list
    """
    def wrap(render: R) -> R:
        @functools.wraps(render)
        def checked(record: Any) -> dict[str, Any]:
            if not isinstance(record, record_type):
                raise TypeError(f"{method} renders {record_type.__name__} objects, got {type(record).__name__}")
            return render(record)
        return checked  # type: ignore[return-value]
    return wrap


@dataclass(frozen=True)
class MethodSpec:
    """Everything the shared faces need to know about a method.

    Args:
        name: the registered name (`vlmjudge <name>`, `get_method(name)`).
        inputs: the columns `score_batch` requires ("image", "prompt", "reference", ...).
        build: `build(judge, **config)` returns the method's `Scorer`.
        score_range: the raw score range.
        render: `render(record)` returns a dict for apps and reports: `score_text` (str),
            `markdown` (str) and optionally `image` (PIL image).
        normalize: maps a score to [0, 1] (rewards, plots); left out, it is the linear map of
            `score_range` (`LinearScale`).
        description: what the method measures, in a few sentences (a Space app without a card shows it).
        optional_inputs: the columns `score_batch` uses when present.
        default_model: the judge loaded when none is given; None: the method needs no judge, or
            the user names one.
        config: the keywords of `build` and their defaults (what `--method-option` may set).
        statistics: the method's own statistics over its saved records (the first is its
            headline), recomputed on resamples by `vlmjudge compare`.
        human: how the paper's human labels are read and matched to the records (`vlmjudge
            agreement`); None: the generic protocol.
        annotation: what the paper asked its annotators, as `vlmjudge annotate` asks it.
        extra: the optional extra the method needs (`pip install vlmjudge[<extra>]`; None: the
            core install runs it).
        requires: the modules it imports from there, which `vlmjudge info` looks for without
            importing them.

    Examples:
        >>> spec = MethodSpec(name="toy", inputs=("image",), build=dict, score_range=(0.0, 10.0),
        ...                   render=lambda record: {"score_text": "", "markdown": ""})
        >>> spec.normalize(2.5), spec.check_batch({"image": [1, 2]})
        (0.25, 2)
    """

    name: str
    inputs: tuple[str, ...]
    build: Callable[..., Scorer]
    score_range: tuple[float, float]
    render: Callable[[ScoreRecord], dict[str, Any]]
    normalize: Callable[[float], float] = None  # type: ignore[assignment]  # set in __post_init__
    description: str = ""
    optional_inputs: tuple[str, ...] = ()
    default_model: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    statistics: Mapping[str, "Statistic"] = field(default_factory=dict)
    human: HumanProtocol | None = None
    annotation: AnnotationProtocol | None = None
    extra: str | None = None
    requires: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.normalize is None:
            object.__setattr__(self, "normalize", LinearScale(*self.score_range))

    def missing_requirements(self) -> list[str]:
        """The modules of `requires` that are not installed (found without importing them).

        Examples:
            >>> spec = MethodSpec(name="toy", inputs=("image",), build=dict, score_range=(0.0, 1.0),
            ...                   render=dict, extra="toy", requires=("json", "surely_not_a_module_x"))
            >>> spec.missing_requirements()
            ['surely_not_a_module_x']
        """
        from importlib.util import find_spec

        def absent(module: str) -> bool:
            try:
                return find_spec(module) is None
            except (ImportError, ValueError):  # a parent package that is missing or broken
                return True
        return [module for module in self.requires if absent(module)]

    def check_batch(self, batch: Mapping[str, Sequence[Any]]) -> int:
        """The batch's length, after checking required columns exist and lengths agree."""
        missing = [c for c in self.inputs if c not in batch]
        if missing:
            raise ValueError(f"{self.name}: batch lacks required columns {missing} (has {sorted(batch)})")
        lengths = {c: len(batch[c]) for c in (*self.inputs, *self.optional_inputs) if c in batch}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"{self.name}: columns differ in length: {lengths}")
        n = next(iter(lengths.values()))
        if n == 0:
            raise ValueError(f"{self.name}: empty batch")
        return n


_RUNTIME: dict[str, MethodSpec] = {}


def register(spec: MethodSpec) -> MethodSpec:
    """Register a method at run time (in addition to the installed entry points)."""
    if not isinstance(spec, MethodSpec):
        raise TypeError(f"register() takes a MethodSpec, got {type(spec).__name__}")
    _RUNTIME[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    _RUNTIME.pop(name, None)


def _entry_points(group: str) -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=group)}


def method_names() -> list[str]:
    """Names of all registered methods, without importing them."""
    return sorted({*_entry_points(ENTRY_POINT_GROUP), *_RUNTIME})


def get_method(name: str) -> MethodSpec:
    """The spec registered under `name`; importing its package only now."""
    if name in _RUNTIME:
        return _RUNTIME[name]
    eps = _entry_points(ENTRY_POINT_GROUP)
    if name not in eps:
        raise KeyError(f"no method {name!r}; registered: {method_names()}")
    spec = eps[name].load()
    if callable(spec) and not isinstance(spec, MethodSpec):
        spec = spec()
    if not isinstance(spec, MethodSpec):
        raise TypeError(f"entry point {name!r} gave a {type(spec).__name__}, not a MethodSpec")
    return spec


def list_methods() -> dict[str, MethodSpec | Exception]:
    """Every registered method's spec, or the error that loading it raised (for `vlmjudge info`)."""
    out: dict[str, MethodSpec | Exception] = {}
    for name in method_names():
        try:
            out[name] = get_method(name)
        except Exception as exc:  # reported to the user by `vlmjudge info`, never hidden
            out[name] = exc
    return out


def command_hooks() -> dict[str, Any]:
    """CLI sub-command entry points (`vlmjudge.commands`): name -> entry point, not yet loaded."""
    return _entry_points(COMMAND_GROUP)
