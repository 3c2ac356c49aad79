"""The pure math of Image Regeneration: similarity in percent, ratings on [0, 1], and selection.

No model and no judge here: the functions take numbers (or embeddings already computed, for
`cosine_percent`) and return numbers, so they can be checked by hand.

* Similarity: `cosine_percent` of CLIP or DINOv2 embeddings; `combined_score`, the mean of the two
  clipped at 0 (the score `regeneration.spec` reports); `normalize` puts it on [0, 1].
* Ratings: `normalize_rating` maps the MLLM's 1-5 to [0, 1]; `summarize_ratings` averages them.
* Selection (presets in `SELECTION_PRESETS`, the weights of the mix that picks each round's winner):
  `combine` (one candidate's selection score), `select` (a round's best candidate), `final_pick`
  (which round's winner is the regeneration).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class Ratings(Protocol):
    """What `summarize_ratings` reads of one pair's ratings (`regeneration.asking.judging.MLLMScores` has
    it); asking/judging.py imports this module for `normalize_rating`, so the type is described here.

    Examples:
        Any object with these attributes will do:

        >>> from types import SimpleNamespace
        >>> summarize_ratings([SimpleNamespace(content_norm=1.0, perceptual_norm=None, failures=["perceptual"])])
        {'mllm_content': 1.0, 'mllm_perceptual': None, 'mllm_parse_failures': 1}
    """

    failures: Sequence[Any]

    @property
    def content_norm(self) -> float | None:
        """The content rating on [0, 1], None when unreadable."""

    @property
    def perceptual_norm(self) -> float | None:
        """The perceptual rating on [0, 1], None when unreadable."""


#: The weights that pick each round's winner, by preset name (`regeneration.config` gives their sources).
SELECTION_PRESETS: dict[str, dict[str, float]] = {
    "release": {"clip": 0.5, "dino": 0.5, "mllm": 0.0},
    "paper": {"clip": 1 / 3, "dino": 1 / 3, "mllm": 1 / 3},
}
DEFAULT_SELECTION = "release"  # presets: see `regeneration.config` for where each comes from


def cosine_percent(a: Any, b: Any) -> Any:
    """Row-wise cosine of two (n, d) tensors x 100, in float64, clamped to [-100, 100].

    Examples:
        >>> import torch
        >>> a = torch.tensor([[1.0, 0.0], [1.0, 0.0], [3.0, 4.0]])
        >>> b = torch.tensor([[2.0, 0.0], [0.0, 1.0], [-3.0, -4.0]])
        >>> cosine_percent(a, b).tolist()
        [100.0, 0.0, -100.0]
    """
    import torch

    if a.shape != b.shape:
        raise ValueError(f"embedding shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}")
    a, b = a.double(), b.double()
    cos = torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-12)
    return cos.clamp(-1.0, 1.0) * 100.0


def combined_score(clip: float, dino: float) -> float:
    """Mean of CLIP % and DINO %, each clipped at 0 (a negative cosine is no similarity).

    Examples:
        CLIP 80 % and DINO 60 % combine to 70; a negative DINO cosine counts as 0:

        >>> combined_score(80.0, 60.0), combined_score(80.0, -10.0)
        (70.0, 40.0)
    """
    return (max(clip, 0.0) + max(dino, 0.0)) / 2.0


def normalize(score: float) -> float:
    """Score on 0..100 to [0, 1] (clipped).

    Examples:
        >>> normalize(70.0), normalize(130.0), normalize(-5.0)
        (0.7, 1.0, 0.0)
    """
    return min(max(score, 0.0), 100.0) / 100.0


def normalize_rating(score: float | None) -> float | None:
    """(s - 1) / 4: a 1-5 rating on [0, 1]; None stays None.

    Examples:
        >>> normalize_rating(1), normalize_rating(4), normalize_rating(5), normalize_rating(None)
        (0.0, 0.75, 1.0, None)
        >>> normalize_rating(6)
        Traceback (most recent call last):
        ...
        ValueError: a rating must lie in 1..5, got 6
    """
    if score is None:
        return None
    if not 1 <= score <= 5:
        raise ValueError(f"a rating must lie in 1..5, got {score}")
    return (score - 1.0) / 4.0


def summarize_ratings(ratings: Sequence[Ratings]) -> dict[str, Any]:
    """Means of the normalised ratings over readable answers (None when none was readable) and the
    number of parse failures: `mllm_content`, `mllm_perceptual`, `mllm_parse_failures`.

    Examples:
        >>> from regeneration.asking.judging import MLLMScores
        >>> summarize_ratings([MLLMScores(content=5, perceptual=3), MLLMScores(content=3, perceptual=None)])
        {'mllm_content': 0.75, 'mllm_perceptual': 0.5, 'mllm_parse_failures': 0}
    """
    out: dict[str, Any] = {}
    for name in ("content", "perceptual"):
        readable = [v for v in (getattr(r, f"{name}_norm") for r in ratings) if v is not None]
        out[f"mllm_{name}"] = sum(readable) / len(readable) if readable else None
    out["mllm_parse_failures"] = sum(len(r.failures) for r in ratings)
    return out


def combine(scores: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """The selection score: sum of weight x score over weighted criteria (MLLM on 0-100); None if a
    weighted criterion is missing.

    Examples:
        The paper's preset weighs CLIP, DINO and the MLLM rating (0-100) equally:

        >>> paper = SELECTION_PRESETS["paper"]
        >>> round(combine({"clip": 80.0, "dino": 60.0, "mllm": 70.0}, paper), 6)
        70.0
        >>> combine({"clip": 80.0, "dino": 60.0, "mllm": None}, paper) is None
        True
        >>> combine({"clip": 80.0, "dino": 60.0, "mllm": None}, SELECTION_PRESETS["release"])
        70.0
    """
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
    all others; if all failed, CLIP/DINO alone decide. No candidates is a ValueError.

    Examples:
        The release preset ignores the MLLM rating; the paper's ranks a candidate whose rating
        failed below the others:

        >>> candidates = [{"clip": 70.0, "dino": 50.0, "mllm": 90.0}, {"clip": 80.0, "dino": 60.0, "mllm": None}]
        >>> select(candidates)
        (1, [60.0, 70.0])
        >>> best, scores = select(candidates, SELECTION_PRESETS["paper"])
        >>> best, scores[1]
        (0, None)
    """
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
    rounds (`"best"`, the first on ties). Returns its position in `round_winners`.

    Examples:
        The last round's winner is the regeneration (paper and release), even when an earlier
        round scored higher; `final="best"` takes the highest:

        >>> winners = [{"combined": 72.0}, {"combined": 65.0}]
        >>> final_pick(winners), final_pick(winners, "best")
        (1, 0)
    """
    if not round_winners:
        raise ValueError("no rounds to pick from")
    if final == "last":
        return len(round_winners) - 1
    if final != "best":
        raise ValueError(f"final must be 'last' or 'best', got {final!r}")
    return max(range(len(round_winners)),
               key=lambda t: (round_winners[t].get("combined") is not None, round_winners[t].get("combined") or 0.0, -t))
