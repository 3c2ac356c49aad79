"""How a regeneration run searches (`LoopConfig`), the named selection presets, and the selection
itself: the combined score of a candidate, the best candidate of a round, the final pick.

Selection presets (the weights of the mix that picks each round's winner):

* `"release"` (the default): 0.5 CLIP % + 0.5 DINO %, no MLLM. The public release's
  `_select_best_candidate`; the golden `select_candidate` corpus replays it.
* `"paper"`: CLIP %, DINO % and the MLLM's content rating (on 0-100), one third each. The
  paper (Section "Iterative Generation", image selection) selects with CLIP, DINOv2 and
  GPT-4V but gives no weights; equal weights are this project's reading.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .parsing import READINGS

#: Version of the loop's behaviour, recorded in every run folder's config.json. Version 2: the
#: interrogator baseline is single-shot, "direct" keeps the IUT in feedback and revision, and
#: answers are read as the release reads them. A folder made by another version does not resume.
LOOP_VERSION = 2

DEFAULT_ASPECTS = ("overall", "style", "color", "detail")
PROMPT_MODES = ("iut", "direct", "interrogator", "user")
INTERROGATOR_RUNS = ("single", "loop")
SELECTION_PRESETS: dict[str, dict[str, float]] = {
    "release": {"clip": 0.5, "dino": 0.5, "mllm": 0.0},
    "paper": {"clip": 1 / 3, "dino": 1 / 3, "mllm": 1 / 3},
}
DEFAULT_SELECTION = "release"


def _weights(preset: str) -> tuple[tuple[str, float], ...]:
    if preset not in SELECTION_PRESETS:
        raise ValueError(f"selection must be one of {sorted(SELECTION_PRESETS)}, got {preset!r}")
    return tuple(sorted(SELECTION_PRESETS[preset].items()))


@dataclass(frozen=True)
class LoopConfig:
    """How a regeneration run searches: rounds T, variants N, aspect queue, selection weights, seeds.

    `interrogator="single"` (default) runs the CLIP-interrogator baseline as the paper does:
    its prompt, as written, generates one image that is compared with the reference (no
    rewording, no feedback rounds); `"loop"` sends it through the full T-round loop instead.
    `json_reading` is how answers are read (`parsing.READINGS`; default the release's).
    """

    rounds: int = 4
    variants: int = 3
    aspects: tuple[str, ...] = DEFAULT_ASPECTS
    weights: tuple[tuple[str, float], ...] = _weights(DEFAULT_SELECTION)
    prompt_mode: str = "iut"
    final: str = "last"
    final_mllm: bool = True
    seed: int = 0
    generator_batch: int = 8
    max_objects: int = 5
    interrogator: str = "single"
    json_reading: str = "release"

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {self.rounds}")
        if self.variants < 1:
            raise ValueError(f"variants must be >= 1, got {self.variants}")
        if not self.aspects:
            raise ValueError("the aspect queue is empty")
        if self.prompt_mode not in PROMPT_MODES:
            raise ValueError(f"prompt_mode must be one of {PROMPT_MODES}, got {self.prompt_mode!r}")
        if self.final not in ("last", "best"):
            raise ValueError(f"final must be 'last' or 'best', got {self.final!r}")
        if self.interrogator not in INTERROGATOR_RUNS:
            raise ValueError(f"interrogator must be one of {INTERROGATOR_RUNS}, got {self.interrogator!r}")
        if self.json_reading not in READINGS:
            raise ValueError(f"json_reading must be one of {READINGS}, got {self.json_reading!r}")
        w = self.weight_map
        unknown = set(w) - {"clip", "dino", "mllm"}
        if unknown:
            raise ValueError(f"unknown selection weights {sorted(unknown)}; use clip, dino, mllm")
        if any(v < 0 for v in w.values()) or sum(w.values()) <= 0:
            raise ValueError(f"selection weights must be >= 0 with a positive sum, got {w}")
        if self.generator_batch < 1:
            raise ValueError("generator_batch must be >= 1")

    @classmethod
    def make(cls, weights: Mapping[str, float] | None = None, *, selection: str | None = None,
             **kwargs: Any) -> LoopConfig:
        """Build from a weights dict (missing keys are 0 when any is given) or a named selection
        preset (`SELECTION_PRESETS`: "release", the default, or "paper"), not both."""
        if weights is not None and selection is not None:
            raise ValueError("give selection weights or a selection preset, not both")
        if selection is not None:
            kwargs["weights"] = _weights(selection)
        elif weights is not None:
            full = {"clip": 0.0, "dino": 0.0, "mllm": 0.0, **weights}
            kwargs["weights"] = tuple(sorted(full.items()))
        if "aspects" in kwargs:
            kwargs["aspects"] = tuple(kwargs["aspects"])
        return cls(**kwargs)

    @property
    def weight_map(self) -> dict[str, float]:
        return dict(self.weights)

    @property
    def single_shot(self) -> bool:
        """The interrogator baseline as the paper runs it: one prompt, one image, no rounds."""
        return self.prompt_mode == "interrogator" and self.interrogator == "single"

    @property
    def effective_rounds(self) -> int:
        """Rounds actually run: 1 for the single-shot baseline, else `rounds`."""
        return 1 if self.single_shot else self.rounds

    def aspect(self, round: int) -> str:
        return self.aspects[(round - 1) % len(self.aspects)]

    def seed_for(self, round: int, index: int) -> int:
        """Seeds differ per candidate and round and repeat across references and models."""
        return self.seed + (round - 1) * self.variants + index

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["aspects"] = list(self.aspects)
        data["weights"] = self.weight_map
        return data


def combine(scores: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """The selection score: sum of weight x score over weighted criteria (MLLM on 0-100); None if a
    weighted criterion is missing."""
    total = 0.0
    for name, w in weights.items():
        if w == 0:
            continue
        value = scores.get(name)
        if value is None:
            return None
        total += w * value
    return total


def select(candidates: Sequence[Mapping[str, float | None]],
           weights: Mapping[str, float] | None = None) -> tuple[int, list]:
    """Index of the best candidate (first on ties) and every candidate's combined score, under
    `weights` (default: the default preset's). Candidates whose MLLM judgement failed rank below
    all others; if all failed, CLIP/DINO alone decide. No candidates is a ValueError."""
    if not candidates:
        raise ValueError("a round without candidates has no best candidate")
    weights = SELECTION_PRESETS[DEFAULT_SELECTION] if weights is None else weights
    combined = [combine(c, weights) for c in candidates]
    if all(v is None for v in combined):
        fallback = {k: v for k, v in weights.items() if k != "mllm"}
        if sum(fallback.values()) <= 0:
            raise ValueError("every candidate lacks its MLLM score and no CLIP/DINO weight is set")
        combined = [combine(c, fallback) for c in candidates]
    best = max(range(len(combined)), key=lambda i: (combined[i] is not None, combined[i] or 0.0, -i))
    return best, combined


def final_pick(round_winners: Sequence[Mapping[str, Any]], final: str = "last") -> int:
    """Which round's winner is the regeneration: the last round's (`final="last"`, the paper and
    the release, even when an earlier round scored higher) or the highest combined score over
    rounds (`"best"`, the first on ties). Returns its position in `round_winners`."""
    if not round_winners:
        raise ValueError("no rounds to pick from")
    if final == "last":
        return len(round_winners) - 1
    if final != "best":
        raise ValueError(f"final must be 'last' or 'best', got {final!r}")
    return max(range(len(round_winners)),
               key=lambda t: (round_winners[t].get("combined") is not None, round_winners[t].get("combined") or 0.0, -t))
