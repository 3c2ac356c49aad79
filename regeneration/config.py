"""How a regeneration run searches (`LoopConfig`) and which named selection preset it uses; the
selection math itself (`combine`, `select`, `final_pick`) is in `regeneration.scoring`.

Selection presets (the weights of the mix that picks each round's winner):

* `"release"` (the default): 0.5 CLIP % + 0.5 DINO %, no MLLM. The public release's
  `_select_best_candidate`; the golden `select_candidate` corpus replays it.
* `"paper"`: CLIP %, DINO % and the MLLM's content rating (on 0-100), one third each. The
  paper (Section "Iterative Generation", image selection) selects with CLIP, DINOv2 and
  GPT-4V but gives no weights; equal weights are this project's reading.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .parsing import READINGS
from .scoring import DEFAULT_SELECTION, SELECTION_PRESETS

#: Version of the loop's behaviour, recorded in every run folder's config.json. Version 2: the
#: interrogator baseline is single-shot, "direct" keeps the IUT in feedback and revision, and
#: answers are read as the release reads them. A folder made by another version does not resume.
LOOP_VERSION = 2

DEFAULT_ASPECTS = ("overall", "style", "color", "detail")
PROMPT_MODES = ("iut", "direct", "interrogator", "user")
INTERROGATOR_RUNS = ("single", "loop")


def _weights(preset: str) -> tuple[tuple[str, float], ...]:
    if preset not in SELECTION_PRESETS:
        raise ValueError(f"selection must be one of {sorted(SELECTION_PRESETS)}, got {preset!r}")
    return tuple(sorted(SELECTION_PRESETS[preset].items()))


@dataclass(frozen=True)
class LoopConfig:
    """How a regeneration run searches: rounds T, variants N, aspect queue, selection weights, seeds.

    `LoopConfig.make` builds one from a weights dict or a named selection preset.

    Args:
        rounds: T, the rounds of generation and revision per reference.
        variants: N, the candidate prompts (and images) per round.
        aspects: the revision queue, one aspect per round, cycled (overall, style, color, detail).
        weights: the selection weights of "clip", "dino" and "mllm", as sorted (name, weight)
            pairs; default the "release" preset (`regeneration.scoring.SELECTION_PRESETS`).
        prompt_mode: the initial prompt: "iut" (from the Image Understanding Tree), "direct" (the
            judge writes it without the tree; feedback still sees it), "interrogator" (caption and
            CLIP) or "user" (the prompts given to `RegenerationLoop.run`).
        final: the regeneration is the "last" round's winner (the paper and the release) or the
            "best" of all rounds.
        final_mllm: rate the final regeneration with the judge (content and perceptual quality).
        seed: the generator's base seed; each round and candidate adds to it.
        generator_batch: images per generator call.
        max_objects: objects the Image Understanding Tree describes at most.
        interrogator: "single" (default) runs the CLIP-interrogator baseline as the paper does:
            its prompt, as written, generates one image that is compared with the reference (no
            rewording, no feedback rounds); "loop" sends it through the full T-round loop instead.
        json_reading: how answers are read (`regeneration.parsing.READINGS`; default the
            release's).
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


def parse_weights(text: str) -> dict[str, float]:
    """A selection mix written as text (`--weights clip=0.5,dino=0.5`), as weights by name.

    Examples:
        >>> parse_weights("clip=0.5, dino=0.5")
        {'clip': 0.5, 'dino': 0.5}
    """
    weights = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"weight {part!r} is not name=value")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"weight {part!r} has no number") from None
    return weights
