"""Regeneration's human protocol: people rate how similar each regenerated image is to its
reference, 1 to 5, and the combined CLIP/DINO score is checked against those ratings.

A label line carries `rating`; its `id` is the pair's reference file name, as `regeneration compare`
names its rows. When the rows also carry the MLLM's 1-5 content rating, its rank agreement with
people is reported beside the score's, so the two can be told apart.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from vlmjudge.stats.correlation import spearman
from vlmjudge.stats.human_sets.protocol import HumanProtocol, number


def rate_label(label: Mapping[str, Any]) -> float:
    """An annotator's 1-5 similarity rating."""
    rating = number(label.get("rating"))
    if rating is None or not 1 <= rating <= 5:
        raise ValueError(f"rating must be a number from 1 to 5, got {label.get('rating')!r}")
    return rating


def compare_details(rows: Sequence[Mapping[str, Any]], records: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Spearman's rho of the MLLM's content rating against people's, where the rows carry one."""
    pairs = [(number(records[row["id"]].get("mllm_content_rating")), row["human"]) for row in rows]
    pairs = [(m, h) for m, h in pairs if m is not None and h is not None]
    if len(pairs) < 2:
        return {}
    return {"measures": {"spearman_mllm_content": spearman([m for m, _ in pairs], [h for _, h in pairs]),
                         "mllm_content_pairs": len(pairs)}}


#: How Regeneration's human similarity ratings are read and matched to its pair rows (`MethodSpec.human`).
PROTOCOL = HumanProtocol(rate=rate_label, details=compare_details, human_axis="people's similarity (1-5)",
                         judge_axis="Regeneration score (0-100)")
