"""The methods a benchmark runs: names from the registry, each with its options (typed by the
method's own defaults), checked against what the suite can give before any work starts.

A benchmark gives every method the model's image (`image`, or `generated` for a method comparing
it with a reference), the record id (`id`), the suite's prompt (`prompt`) and its reference image
(`reference`, `references`); a method that needs anything else is refused in one line.
"""
from __future__ import annotations

import inspect
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..registry import MethodSpec
from .models import BenchmarkError, shown
from .suites import PromptSuite

#: The columns a benchmark fills: name -> what it holds.
GIVEN_COLUMNS = {"image": "the model's image", "generated": "the model's image", "id": "the record id",
                 "prompt": "the suite's prompt", "reference": "the suite's reference image",
                 "references": "the suite's reference image"}
_TRUE, _FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


@dataclass
class MethodPlan:
    """One method of a benchmark: its spec, its options, and whether it runs over the judge."""

    name: str
    spec: MethodSpec
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def needs_judge(self) -> bool:
        """A method without a default model (Image Regeneration's similarity) runs with no judge."""
        return self.spec.default_model is not None


def resolve_methods(names: str | Sequence[str]) -> list[MethodPlan]:
    """The methods of `--methods a,b` (or a list): each registered (or `module:SPEC`), none twice."""
    from ..distributed.common import resolve_method

    items = names.split(",") if isinstance(names, str) else list(names)
    items = [item.strip() if isinstance(item, str) else item for item in items]
    if not items or any(item == "" for item in items):
        raise BenchmarkError(f"--methods {names!r}: give method names separated by commas, e.g. terravis,viescore2")
    plans: list[MethodPlan] = []
    for item in items:
        try:
            spec = resolve_method(item)
        except KeyError as error:
            raise BenchmarkError(str(error.args[0])) from None
        except (ImportError, AttributeError, TypeError, ValueError) as error:
            raise BenchmarkError(f"method {item!r} cannot load: {str(error).splitlines()[0]}") from None
        if any(plan.name == spec.name for plan in plans):
            raise BenchmarkError(f"--methods: {spec.name} is given twice")
        plans.append(MethodPlan(spec.name, spec))
    return plans


def option_defaults(spec: MethodSpec) -> tuple[dict[str, Any], bool]:
    """The method's options with their defaults (its spec's `config`, else the keywords of its
    `build` after the judge), and whether `build` takes other keywords too."""
    defaults: dict[str, Any] = {}
    open_ended = False
    try:
        parameters = list(inspect.signature(spec.build).parameters.values())[1:]  # the first is the judge
    except (TypeError, ValueError):  # a builtin without a signature: every option is untyped
        parameters, open_ended = [], True
    for parameter in parameters:
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            open_ended = True
        elif parameter.kind is not inspect.Parameter.VAR_POSITIONAL:
            defaults[parameter.name] = None if parameter.default is inspect.Parameter.empty else parameter.default
    defaults.update(spec.config)
    return defaults, open_ended


def _refuse_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a number a method takes")


def _finite(value: Any, where: str) -> Any:
    """`value` when every number in it is finite; NaN or Infinity anywhere is a BenchmarkError."""
    if isinstance(value, float) and not math.isfinite(value):
        raise BenchmarkError(f"{where}: {value} is not a finite number")
    if isinstance(value, (list, tuple)):
        [_finite(item, where) for item in value]
    if isinstance(value, dict):
        [_finite(item, where) for item in value.values()]
    return value


def typed_option(text: str, default: Any, where: str) -> Any:
    """An option's text as the type of its default: a bool, a whole number, a finite float or text;
    with no default (or a list, None), a JSON value when it reads as one, else the text.

    Examples:
        >>> typed_option("0.25", 0.5, "terravis.alpha"), typed_option("no", True, "x.flag"), typed_option("3", None, "x.n")
        (0.25, False, 3)
        >>> typed_option("holistic", "workflow", "terravis.variant"), typed_option("[0.4, 0.6]", (0.4, 0.6), "t.r")
        ('holistic', [0.4, 0.6])
        >>> typed_option("nan", 1.0, "terravis.lam")
        Traceback (most recent call last):
        ...
        vlmjudge.benchmark.models.BenchmarkError: --method-option terravis.lam=nan: not a finite number
    """
    label = f"--method-option {where}={text}"
    if isinstance(default, bool):
        if text.strip().lower() not in _TRUE + _FALSE:
            raise BenchmarkError(f"{label}: expected true or false")
        return text.strip().lower() in _TRUE
    if isinstance(default, int):
        try:
            return int(text)
        except ValueError:
            raise BenchmarkError(f"{label}: expected a whole number") from None
    if isinstance(default, float):
        try:
            value = float(text)
        except ValueError:
            raise BenchmarkError(f"{label}: expected a number") from None
        if not math.isfinite(value):
            raise BenchmarkError(f"{label}: not a finite number")
        return value
    if isinstance(default, str):
        return text
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as error:
        if "not a number a method takes" in str(error):
            raise BenchmarkError(f"{label}: not a finite number") from None
        return text
    return _finite(value, label)


def apply_options(plans: Sequence[MethodPlan], options: Sequence[str] | Mapping[str, Mapping[str, Any]] | None) -> None:
    """Give each method its options: `--method-option METHOD.KEY=VALUE` texts (typed by
    `typed_option`) or, from Python, {method: {key: value}} (values as given, numbers checked
    finite). An unknown method or key, or a key given twice, is a BenchmarkError."""
    by_name = {plan.name: plan for plan in plans}
    pairs: list[tuple[str, str, Any, bool]] = []
    if isinstance(options, Mapping):
        for method, values in options.items():
            if not isinstance(values, Mapping):
                raise BenchmarkError(f"method_options[{method!r}] must map option names to values")
            pairs += [(str(method), str(key), value, False) for key, value in values.items()]
    else:
        for text in options or ():
            target, sep, value = str(text).partition("=")
            method, dot, key = target.strip().partition(".")
            if not sep or not dot or not method or not key.strip():
                raise BenchmarkError(f"--method-option {text!r}: expected METHOD.KEY=VALUE, e.g. terravis.variant=holistic")
            pairs.append((method, key.strip(), value, True))
    for method, key, value, from_text in pairs:
        if method not in by_name:
            raise BenchmarkError(f"--method-option {method}.{key}: {method} is not one of --methods "
                                 f"({', '.join(by_name)})")
        plan = by_name[method]
        defaults, open_ended = option_defaults(plan.spec)
        if key not in defaults and not open_ended:
            raise BenchmarkError(f"--method-option {method}.{key}: {method} has no option {key!r}; its options: "
                                 f"{', '.join(defaults) or 'none'}")
        if key in plan.options:
            raise BenchmarkError(f"--method-option {method}.{key} is given twice")
        where = f"{method}.{key}"
        plan.options[key] = (typed_option(value, defaults.get(key), where) if from_text
                             else _finite(value, f"method_options {where}"))


def check_inputs(plans: Sequence[MethodPlan], suite: PromptSuite) -> None:
    """Refuse, before any work, a method that needs an input the benchmark cannot give, a prompt
    where the suite has prompts without text, or a reference where some prompt has none."""
    empty = [p.id for p in suite.prompts if not p.prompt.strip()]
    unreferenced = [p.id for p in suite.prompts if p.reference is None]
    for plan in plans:
        for column in plan.spec.inputs:
            if column not in GIVEN_COLUMNS:
                raise BenchmarkError(f"method {plan.name} needs {column!r}, which a benchmark cannot give "
                                     f"(it gives {', '.join(GIVEN_COLUMNS)})")
            if column == "prompt" and empty:
                raise BenchmarkError(f"method {plan.name} needs a prompt; suite {suite.name!r} has none for "
                                     f"{shown(empty)}")
            if column in ("reference", "references") and unreferenced:
                raise BenchmarkError(f"method {plan.name} needs a reference image; suite {suite.name!r} has none "
                                     f"for {shown(unreferenced)} (a suite with references: fager with its images, "
                                     "regeneration, or --prompts with a reference column)")


def batch_columns(spec: MethodSpec, ids: Sequence[str], images: Sequence[Any], prompts: Sequence[str],
                  references: Sequence[str | None]) -> dict[str, list[Any]]:
    """The columns one method's `score_batch` gets for a chunk: what it requires, and of what it
    may use, the ids, and the prompts and references where every item of the chunk has one."""
    wanted = (*spec.inputs, *spec.optional_inputs)
    available: dict[str, list[Any]] = {"image": list(images), "generated": list(images), "id": list(ids)}
    if all(p.strip() for p in prompts):
        available["prompt"] = list(prompts)
    if all(r is not None for r in references):
        available["reference"] = list(references)
    if any(r is not None for r in references):
        available["references"] = list(references)  # per item: an image or None (FAGER's optional column)
    return {name: available[name] for name in wanted if name in available}
