"""Every registered method as an RL reward: `reward(images, prompts, **columns) -> list[float]` in [0, 1].

    world = reward_fn("terravis", judge={"model": "Qwen/Qwen3-VL-8B-Instruct", "cache": "r.sqlite"})
    facts = reward_fn("fager", judge={"model": "Qwen/Qwen3-VL-8B-Instruct", "cache": "r.sqlite"})
    reward = 0.5 * world + 0.5 * facts            # or weighted([(0.5, world), (0.5, facts)])
    values = reward(images, prompts)              # one float in [0, 1] per image

A method's score is mapped to [0, 1] by its own `MethodSpec.normalize` (TerraVis as is,
VIEScore2 / 10, FAGER / 100, Regeneration / 100). An image the method cannot score (N/A,
an unreadable answer) gets `na_value`, 0.0 by default, so an unscorable sample is never
rewarded unless you say so. Extra keyword columns reach the method when it takes them
(Regeneration's `reference`, FAGER's `qa_set` and `references`, `id`); others are ignored,
so trainer-supplied keywords (TRL's `trainer_state`, ...) pass harmlessly.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from vlmjudge.images import to_pil_list
from vlmjudge.integrations.panel import JudgePanel, Method

#: The reward of an image the method could not score, unless `na_value=` says otherwise.
DEFAULT_NA_VALUE = 0.0


class Reward:
    """A reward function over images and prompts; `a * 0.3 + b * 0.7` composes rewards."""

    __name__ = "reward"

    def __call__(self, images: Any, prompts: Sequence[str] | None = None, **columns: Any) -> list[float]:
        raise NotImplementedError

    def terms(self) -> list[tuple[float, "MethodReward"]]:
        raise NotImplementedError

    def __mul__(self, weight: float) -> "WeightedReward":
        return WeightedReward([(float(weight) * w, r) for w, r in self.terms()])

    __rmul__ = __mul__

    def __add__(self, other: "Reward") -> "WeightedReward":
        if not isinstance(other, Reward):
            return NotImplemented
        return WeightedReward([*self.terms(), *other.terms()])


class MethodReward(Reward):
    """One method's [0, 1] score as a reward; N/A images get `na_value`; scored `batch_size` at a time."""

    def __init__(self, method: str | Method, judge: Any = None, *, na_value: float = DEFAULT_NA_VALUE,
                 batch_size: int | None = None, column_names: Mapping[str, str] | None = None) -> None:
        if not (isinstance(na_value, (int, float)) and 0.0 <= na_value <= 1.0):
            raise ValueError(f"na_value must be a number in [0, 1], got {na_value!r}")
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 or None, got {batch_size}")
        self.panel = JudgePanel([method], judge, column_names)
        self.label = self.panel.labels[0]
        self.na_value = float(na_value)
        self.batch_size = batch_size
        self.__name__ = f"{self.label}_reward"
        self.last_records: list[Any] = []

    def terms(self) -> list[tuple[float, "MethodReward"]]:
        return [(1.0, self)]

    def _used_columns(self) -> list[str]:
        spec = self.panel.spec(self.label)
        return [self.panel.column_names.get(c, c) for c in (*spec.inputs, *spec.optional_inputs)]

    def __call__(self, images: Any, prompts: Sequence[str] | None = None, **columns: Any) -> list[float]:
        pictures = to_pil_list(images)
        n = len(pictures)
        if prompts is not None and len(prompts) != n:
            raise ValueError(f"{self.__name__}: {len(pictures)} images but {len(prompts)} prompts")
        used = {k: list(columns[k]) for k in self._used_columns() if k in columns}
        for k, v in used.items():
            if len(v) != n:
                raise ValueError(f"{self.__name__}: column {k!r} has {len(v)} values for {n} images")
        step = self.batch_size or n
        records: list[Any] = []
        for s in range(0, n, step):
            chunk = {k: v[s:s + step] for k, v in used.items()}
            sub_prompts = list(prompts[s:s + step]) if prompts is not None else None
            records += self.panel.score(pictures[s:s + step], sub_prompts, **chunk)[self.label]
        self.last_records = records
        unit = self.panel.unit_scores(self.label, records)
        return [self.na_value if u is None else u for u in unit]

    def __repr__(self) -> str:
        return f"MethodReward({self.label!r}, na_value={self.na_value}, batch_size={self.batch_size})"


class WeightedReward(Reward):
    """sum_i w_i * reward_i: each part scored once per call; weights must keep it in [0, 1]."""

    def __init__(self, terms: Sequence[tuple[float, MethodReward]]) -> None:
        flat: list[tuple[float, MethodReward]] = []
        for weight, reward in terms:
            if not isinstance(reward, Reward):
                raise TypeError(f"a term is (weight, Reward), got a {type(reward).__name__}")
            if not (math.isfinite(weight) and weight >= 0):
                raise ValueError(f"weights must be finite and >= 0, got {weight}")
            flat += [(weight * w, r) for w, r in reward.terms()]
        if not flat or sum(w for w, _ in flat) <= 0:
            raise ValueError("a weighted reward needs at least one positive weight")
        self._terms = flat
        self.__name__ = " + ".join(f"{w:g}*{r.__name__}" for w, r in flat)

    def terms(self) -> list[tuple[float, MethodReward]]:
        return list(self._terms)

    @property
    def total_weight(self) -> float:
        return sum(w for w, _ in self._terms)

    def parts(self, images: Any, prompts: Sequence[str] | None = None, **columns: Any) -> list[list[float]]:
        """Each term's rewards (unweighted), in term order: to log the components."""
        pictures = to_pil_list(images)
        return [reward(pictures, prompts, **columns) for _, reward in self._terms]

    def __call__(self, images: Any, prompts: Sequence[str] | None = None, **columns: Any) -> list[float]:
        if self.total_weight > 1.0 + 1e-9:
            raise ValueError(f"weights sum to {self.total_weight:g}, so the reward could leave [0, 1]; "
                             "use weights summing to at most 1, or weighted(..., normalize=True)")
        parts = self.parts(images, prompts, **columns)
        return [min(1.0, sum(w * p[i] for (w, _), p in zip(self._terms, parts))) for i in range(len(parts[0]))]


def reward_fn(method: str | Method, judge: Any = None, *, na_value: float = DEFAULT_NA_VALUE,
              batch_size: int | None = None, column_names: Mapping[str, str] | None = None,
              label: str | None = None, **config: Any) -> MethodReward:
    """A reward from a registered method: `judge` is a model id, load_judge arguments, a Judge or None;
    `config` goes to the method's `build` (a `Method` carries its own)."""
    if isinstance(method, str):
        method = Method(method, config=config, label=label)
    elif config or label:
        raise ValueError("give config and label inside the Method, not beside it")
    return MethodReward(method, judge, na_value=na_value, batch_size=batch_size, column_names=column_names)


def weighted(terms: Mapping[Reward, float] | Sequence[tuple[float, Reward]], normalize: bool = False) -> WeightedReward:
    """sum_i w_i * reward_i, from (weight, reward) pairs or {reward: weight}; `normalize` divides the
    weights by their sum (so any positive weights keep the reward in [0, 1])."""
    pairs = [(w, r) for r, w in terms.items()] if isinstance(terms, Mapping) else list(terms)
    if normalize:
        total = sum(w for w, _ in pairs)
        if total <= 0:
            raise ValueError("weights must have a positive sum")
        pairs = [(w / total, r) for w, r in pairs]
    return WeightedReward(pairs)
