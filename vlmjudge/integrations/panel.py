"""`JudgePanel`: one or more registered methods, each with its judge, scored together.

Every training-loop face (datasets maps, Lightning and Trainer callbacks, rewards) goes
through a panel, so they share one way to turn images, prompts and columns into each
method's batch, to build judges lazily (and once per process per judge setting), and to
map scores to [0, 1] through the method's own `MethodSpec.normalize`.

A panel holds only names, configs and `load_judge` keyword arguments, so it pickles into
worker processes (`datasets.map(num_proc=...)`, DDP spawn), where each process builds
its own judge on first use; a shared `cache=` file keeps them from repeating calls.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlmjudge.images import to_pil_list
from vlmjudge.faces.loading import judge_recipe
from vlmjudge.judge import Judge
from vlmjudge.registry import MethodSpec, ScoreRecord, get_method

#: The inputs that take the judged (generated) image, in the order they are looked for.
IMAGE_INPUTS = ("image", "generated")


class _Inherit:
    """Stands for "use the panel's judge" in `Method.judge`."""

    def __repr__(self) -> str:
        return "INHERIT"

    def __reduce__(self) -> str:
        return "INHERIT"


#: `Method(judge=INHERIT)`, the default: the method scores with its panel's judge.
INHERIT = _Inherit()

_JUDGES: dict[tuple[int, str], Judge] = {}
_JUDGES_LOCK = threading.Lock()


def judge_kwargs(judge: Any) -> dict[str, Any] | None:
    """`load_judge` keyword arguments from a model id or path, or a mapping; None for no judge."""
    if judge is None:
        return None
    if isinstance(judge, (str, os.PathLike)):
        return {"model": os.fspath(judge)}
    if isinstance(judge, Mapping):
        return dict(judge)
    raise TypeError(f"a judge setting is a model id or path, a dict of load_judge arguments, a Judge or None; "
                    f"got {type(judge).__name__}")


def shared_judge(kwargs: Mapping[str, Any], default_model: str | None = None) -> Judge:
    """The judge the `load_judge` arguments `kwargs` give (loaded as every face loads one; no
    "model": the method's `default_model`), built once per process and shared by every user."""
    args = dict(kwargs)
    recipe = judge_recipe(default_model, model=args.pop("model", None), backend=args.pop("backend", None),
                          judge_kwargs=args, where="judge settings")
    setting = {f.name: getattr(recipe, f.name) for f in dataclasses.fields(recipe)}
    key = (os.getpid(), json.dumps(setting, sort_keys=True, default=repr))
    with _JUDGES_LOCK:
        if key not in _JUDGES:
            _JUDGES[key] = recipe.load()
        return _JUDGES[key]


def release_judges() -> int:
    """Forget every judge the integrations built in this process, so new panels build fresh ones (the
    memory is freed once no panel or scorer built before still holds them); how many."""
    with _JUDGES_LOCK:
        n = len(_JUDGES)
        _JUDGES.clear()
    return n


@dataclass(frozen=True)
class Method:
    """A registered method with the judge and config to build it; `label` names its outputs.

    Args:
        name: the method's registered name (`vlmjudge.list_methods()`).
        judge: a model id or path, a dict of `load_judge` arguments (picklable: built
            lazily in each process), a built `Judge` (this process only), None (methods that
            need no judge, such as Regeneration's similarity score) or `INHERIT` (the panel's).
        config: the method's keywords (its MethodSpec's `config`: `lam`, `fields`, ...).
        label: the name of its outputs; None: `name` (two entries of one method need labels).
    """

    name: str
    judge: Any = INHERIT
    config: Mapping[str, Any] = field(default_factory=dict)
    label: str | None = None

    @property
    def key(self) -> str:
        return self.label or self.name


def as_methods(methods: Any) -> list[Method]:
    """Methods from a name, a list of names / `Method`s, or a mapping name -> config."""
    if isinstance(methods, (str, Method)):
        methods = [methods]
    if isinstance(methods, Mapping):
        methods = [Method(name, config=dict(config or {})) for name, config in methods.items()]
    out = []
    for m in methods:
        if isinstance(m, str):
            m = Method(m)
        if not isinstance(m, Method):
            raise TypeError(f"a method is a registered name or a Method, got {type(m).__name__}")
        out.append(m)
    if not out:
        raise ValueError("no methods given")
    keys = [m.key for m in out]
    if len(set(keys)) != len(keys):
        raise ValueError(f"methods share an output name: {keys}; give them distinct labels")
    return out


def image_input(spec: MethodSpec) -> str:
    """The input column that takes the judged image ("image", or Regeneration's "generated")."""
    for name in IMAGE_INPUTS:
        if name in spec.inputs:
            return name
    raise ValueError(f"{spec.name}: none of its inputs {spec.inputs} takes the judged image {IMAGE_INPUTS}")


def unit_score(spec: MethodSpec, score: float | None) -> float | None:
    """The method's score mapped to [0, 1] by its own `normalize`; None stays None."""
    if score is None:
        return None
    value = float(spec.normalize(score))
    if not (math.isfinite(value) and -1e-9 <= value <= 1.0 + 1e-9):
        raise ValueError(f"{spec.name}: normalize({score!r}) = {value} lies outside [0, 1]")
    return min(max(value, 0.0), 1.0)


class JudgePanel:
    """Score the same images (with prompts and extra columns) under several methods.

    Args:
        methods: a registered name, a list of names and `Method`s, or a mapping name -> config.
        judge: the judge of every method left at `INHERIT`: a model id or path, a dict of
            `load_judge` arguments, a built `Judge`, or None (each method's default model).
        column_names: input name -> the column that holds it, where they differ.
    """

    def __init__(self, methods: Any, judge: Any = None, column_names: Mapping[str, str] | None = None) -> None:
        self.methods = as_methods(methods)
        self.judge = judge
        self.column_names = dict(column_names or {})
        for m in self.methods:
            judge_of = self.judge if m.judge is INHERIT else m.judge
            if not isinstance(judge_of, Judge):
                judge_kwargs(judge_of)  # a bad setting fails here, not in a worker
        self._scorers: dict[str, Any] = {}
        self._judges: dict[str, Judge | None] = {}
        self._specs: dict[str, MethodSpec] = {}

    # -- pickling: settings travel, built judges and scorers do not -----------------
    def __getstate__(self) -> dict[str, Any]:
        built = [m.key for m in self.methods if isinstance(self._judge_setting(m), Judge)]
        if built:
            raise TypeError(f"methods {built} hold a built Judge, which cannot travel to another process; "
                            "give the judge as load_judge arguments (a dict or a model id) instead")
        return {"methods": self.methods, "judge": self.judge, "column_names": self.column_names}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._scorers, self._judges, self._specs = {}, {}, {}

    # -- lazily built parts -----------------------------------------------------------
    @property
    def labels(self) -> list[str]:
        return [m.key for m in self.methods]

    def method(self, label: str) -> Method:
        for m in self.methods:
            if m.key == label:
                return m
        raise KeyError(f"no method labelled {label!r}; have {self.labels}")

    def spec(self, label: str) -> MethodSpec:
        """The registered spec behind `label`."""
        if label not in self._specs:
            self._specs[label] = get_method(self.method(label).name)
        return self._specs[label]

    def _judge_setting(self, m: Method) -> Any:
        return self.judge if m.judge is INHERIT else m.judge

    def judge_of(self, label: str) -> Judge | None:
        """The judge `label` scores with (built now if needed); None for a judge-free method."""
        if label not in self._judges:
            setting = self._judge_setting(self.method(label))
            if setting is None or isinstance(setting, Judge):
                self._judges[label] = setting
            else:
                self._judges[label] = shared_judge(judge_kwargs(setting), self.spec(label).default_model)
        return self._judges[label]

    def scorer(self, label: str) -> Any:
        """The method's scorer, built on first use in this process."""
        if label not in self._scorers:
            m = self.method(label)
            spec = self.spec(label)
            self._scorers[label] = spec.build(self.judge_of(label), **{**spec.config, **m.config})
        return self._scorers[label]

    def model_calls(self) -> int:
        """Model calls made so far by this process's judges of this panel (each judge counted once)."""
        judges = {id(j): j for j in (self.judge_of(k) for k in self.labels) if j is not None}
        return sum(j.stats.model_calls for j in judges.values())

    # -- scoring ------------------------------------------------------------------------
    def batch_for(self, label: str, images: Sequence[Any], prompts: Sequence[str] | None,
                  columns: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
        """The method's batch: images into its image input, prompts into "prompt", other inputs from
        `columns` (by their `column_names` name); optional inputs only when present."""
        spec = self.spec(label)
        target = image_input(spec)
        batch: dict[str, list[Any]] = {}
        for name in (*spec.inputs, *spec.optional_inputs):
            required = name in spec.inputs
            if name == target:
                batch[name] = list(images)
            elif name == "prompt" and prompts is not None:
                batch[name] = list(prompts)
            else:
                source = self.column_names.get(name, name)
                if source in columns:
                    batch[name] = list(columns[source])
                elif required:
                    given = ["images", *(["prompts"] if prompts is not None else []), *columns]
                    hint = "prompts" if name == "prompt" else f"a column {source!r}"
                    raise ValueError(f"{label}: needs {hint} for its input {name!r}; given {given}")
        return batch

    def score(self, images: Sequence[Any], prompts: Sequence[str] | None = None,
              **columns: Sequence[Any]) -> dict[str, list[ScoreRecord]]:
        """Records per method label, one per image, in order; images may be any kind `to_pil_list`
        takes (a list of paths, PIL images, arrays, or one BCHW tensor)."""
        images = to_pil_list(images)
        if prompts is not None and len(prompts) != len(images):
            raise ValueError(f"{len(images)} images but {len(prompts)} prompts")
        out = {}
        for label in self.labels:
            batch = self.batch_for(label, images, prompts, columns)
            self.spec(label).check_batch(batch)
            records = list(self.scorer(label).score_batch(batch))
            if len(records) != len(images):
                raise RuntimeError(f"{label}: score_batch returned {len(records)} records for {len(images)} images")
            out[label] = records
        return out

    def unit_scores(self, label: str, records: Sequence[ScoreRecord]) -> list[float | None]:
        """Each record's score in [0, 1] (None where it has none)."""
        spec = self.spec(label)
        return [unit_score(spec, r.score) for r in records]

    def summarize(self, records: Mapping[str, Sequence[ScoreRecord]]) -> dict[str, float]:
        """`{label: mean [0, 1] score over scored images, label + "_na": share unscored}`; the mean is
        left out when no image got a score (an N/A batch has no mean, not a mean of 0)."""
        out: dict[str, float] = {}
        for label, recs in records.items():
            scores = [s for s in self.unit_scores(label, recs) if s is not None]
            if scores:
                out[label] = sum(scores) / len(scores)
            out[f"{label}_na"] = 1.0 - len(scores) / len(recs)
        return out
