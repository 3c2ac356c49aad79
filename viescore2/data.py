"""SFT and GRPO examples from annotated images, with targets that carry only the supervision present.

A score-only example has no grid lines at all (missing supervision is not an empty grid);
a clean image with localization supervision is trained to write ``none``. Such clean
localization examples are capped at a share of the corpus (10% in the paper) so that empty
grids do not dominate. Examples use TRL's conversational prompt-completion layout with an
``images`` column: conditioning images first, the generated image last. Without an explicit
``instruction`` each example gets `viescore2.pack.training_instruction`'s text: the
built-in instruction for exactly the fields it supervises. Coverage marks (``!``) are requested
only where the source has coverage supervision (heatmap annotations, paper Section 3.2): mask
sources and clean images are trained on an instruction without marks, and their targets carry none.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, Union

from .grid import DEFAULT_N, SCORE_KEYS, Localization, format_output, union_of

DEFAULT_CLEAN_SHARE = 0.1


@dataclass(frozen=True)
class Annotation:
    """One source example: generated image, prompt, conditioning images and its available supervision."""

    image: Any
    prompt: str
    conditioning: Sequence[Any] = ()
    scores: Mapping[str, float] = field(default_factory=dict)
    localization: Localization | None = None
    id: str | None = None
    coverage: bool | None = None  # the source has coverage supervision (a heatmap); None: it has marks

    def __post_init__(self) -> None:
        unknown = set(self.scores) - set(SCORE_KEYS)
        if unknown:
            raise ValueError(f"unknown score keys {sorted(unknown)}")
        if not any(v is not None for v in self.scores.values()) and self.localization is None:
            raise ValueError(f"annotation {self.id!r} has neither scores nor localization")

    @property
    def coverage_supervised(self) -> bool:
        """True when the example's grid carries coverage supervision, so its instruction asks for ``!`` marks.

        Only heatmap sources do (paper Section 3.2); ``coverage=None`` takes it from the marks the
        grid holds. A clean image never does: it has no defect cell to mark.
        """
        if self.localization is None or self.clean_localization:
            return False
        if self.coverage is not None:
            return bool(self.coverage)
        return bool(union_of(self.localization).marks)

    @property
    def clean_localization(self) -> bool:
        """True for a localization target with no defect cell (its grid text is ``none``)."""
        return self.localization is not None and union_of(self.localization).is_empty


Instruction = Union[str, Callable[[Annotation], str], None]


def scores_from_unit(score: float | None = None, axes: Sequence[float | None] | None = None,
                     integer: bool = True) -> dict[str, float]:
    """Target scores on the 0-10 scale from human scores in [0, 1], as the release writes them.

    ``axes`` = [pq, sc] replaces ``score`` when its first value is given; a PQ without its SC is
    an error. ``integer=True`` (the release) rounds ``10 * v`` half to even (0.25 -> 2, 0.35 -> 4);
    ``integer=False`` keeps ``10 * v``.
    """
    def scaled(value: float) -> float:
        if not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"a unit score must be within 0..1, got {value!r}")
        return float(round(float(value) * 10)) if integer else float(value) * 10.0

    if axes is not None and axes[0] is not None:
        if len(axes) != 2 or axes[1] is None:
            raise ValueError(f"axis scores need both PQ and SC, got {list(axes)!r}")
        return {"pq": scaled(axes[0]), "sc": scaled(axes[1])}
    return {} if score is None else {"score": scaled(score)}


def target_text(annotation: Annotation, marks: bool = True) -> str:
    """The target response: the annotation's scores and grids only, in the judge format.

    Marks are written when ``marks`` is on and the example has coverage supervision.
    """
    scores = {k: v for k, v in annotation.scores.items() if v is not None}
    return format_output(scores, annotation.localization, marks=marks and annotation.coverage_supervised)


def _instruction_text(annotation: Annotation, instruction: Instruction, marks: bool = True) -> str:
    if instruction is None:
        from .pack import training_instruction
        n = union_of(annotation.localization).n if annotation.localization is not None else DEFAULT_N
        text = training_instruction(n=n, marks=marks and annotation.coverage_supervised)(annotation)
    elif callable(instruction):
        text = instruction(annotation)
    elif isinstance(instruction, str):
        if "{prompt}" not in instruction:
            raise ValueError("an instruction template must contain '{prompt}'")
        text = instruction.format(prompt=annotation.prompt)
    else:
        raise TypeError("instruction must be None, a template string or a callable(annotation) -> str")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"empty instruction for annotation {annotation.id!r}")
    return text


def _prompt(annotation: Annotation, instruction: Instruction, marks: bool = True) -> list[dict]:
    images = [{"type": "image"} for _ in range(len(annotation.conditioning) + 1)]
    text = {"type": "text", "text": _instruction_text(annotation, instruction, marks)}
    return [{"role": "user", "content": images + [text]}]


def sft_example(annotation: Annotation, instruction: Instruction = None, marks: bool = True) -> dict:
    """Conversational prompt-completion example for supervised fine-tuning."""
    return {"prompt": _prompt(annotation, instruction, marks),
            "completion": [{"role": "assistant", "content": target_text(annotation, marks)}],
            "images": [*annotation.conditioning, annotation.image], "id": annotation.id}


def grpo_example(annotation: Annotation, instruction: Instruction = None, marks: bool = True) -> dict:
    """Prompt plus the ``target`` column the reward functions read."""
    return {"prompt": _prompt(annotation, instruction, marks), "target": target_text(annotation, marks),
            "images": [*annotation.conditioning, annotation.image], "id": annotation.id}


def clean_cap(others: int, share: float) -> int:
    """Largest number k of clean examples with k <= share * (others + k)."""
    if not 0.0 <= share < 1.0:
        raise ValueError(f"clean share must be in [0, 1), got {share}")
    return math.floor(share * others / (1.0 - share) + 1e-9)


def cap_clean(annotations: Sequence[Annotation], share: float = DEFAULT_CLEAN_SHARE,
              seed: int = 0) -> list[Annotation]:
    """Drop random clean localization examples until they are at most ``share`` of the result (order kept)."""
    clean = [i for i, a in enumerate(annotations) if a.clean_localization]
    limit = clean_cap(len(annotations) - len(clean), share)
    if len(clean) <= limit:
        return list(annotations)
    keep = set(random.Random(seed).sample(clean, limit))
    return [a for i, a in enumerate(annotations) if not a.clean_localization or i in keep]


def build_sft(annotations: Sequence[Annotation], instruction: Instruction = None, clean_share: float = DEFAULT_CLEAN_SHARE,
              seed: int = 0, marks: bool = True) -> list[dict]:
    """SFT examples after capping clean localization examples."""
    return [sft_example(a, instruction, marks) for a in cap_clean(annotations, clean_share, seed)]


def build_grpo(annotations: Sequence[Annotation], instruction: Instruction = None, clean_share: float = DEFAULT_CLEAN_SHARE,
               seed: int = 0, marks: bool = True) -> list[dict]:
    """GRPO examples after capping clean localization examples."""
    return [grpo_example(a, instruction, marks) for a in cap_clean(annotations, clean_share, seed)]
