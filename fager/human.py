"""FAGER's human protocol: people pick the more factual of two images for one prompt (A/B).

The paper's Factual A/B test asks whether a metric scores the factual image at least as high as
the other; with people's choices as the truth, a judge agrees on a pair when it scores the image
people chose higher, a tie counting as FAGER's A/B test counts it (`fager.evaluation`, tie="full" by
default). A label line carries `a` and `b` (the ids of the two images in the judge's run) and
`choice` ("A", "B" or "tie"); the judge's value for a pair is score(a) - score(b).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from vlmjudge.stats.human_sets.protocol import HumanProtocol, confusion_table, generic_metric

from .evaluation import TIE_MODES, ab_test

#: An annotator's choice as a number: +1 prefers image A, -1 image B, 0 neither.
CHOICES = {"a": 1.0, "b": -1.0, "tie": 0.0}


def rate_label(label: Mapping[str, Any]) -> float:
    """An annotator's choice as +1 (A), -1 (B) or 0 (tie)."""
    choice = str(label.get("choice", "")).strip().lower()
    if choice not in CHOICES:
        raise ValueError(f"choice must be 'A', 'B' or 'tie', got {label.get('choice')!r}")
    return CHOICES[choice]


def record_id(record: Mapping[str, Any]) -> str | None:
    """A FAGER verdict names its image by `id` (the items file's index; the shared record layout)."""
    return None if record.get("id") is None else str(record["id"])


def pair_sources(row: Mapping[str, Any]) -> tuple[str, str]:
    """The record ids of a pair's images A and B, as its labels name them."""
    label = row["labels"][0]
    if label.get("a") is None and isinstance(label.get("images"), dict):  # as `vlmjudge annotate` writes it
        return str(label["images"].get("A")), str(label["images"].get("B"))
    if label.get("a") is None or label.get("b") is None:
        raise ValueError(f"FAGER label for pair {row['id']!r} does not name its images 'a' and 'b' "
                         "(or 'images': {'A': ..., 'B': ...})")
    return str(label["a"]), str(label["b"])


def judge_margin(values: Sequence[float]) -> float:
    """The judge's preference for A: score(a) - score(b); positive prefers A."""
    return values[0] - values[1]


def _side(value: float) -> str:
    """A preference as a choice: A above 0, B below, tie at 0."""
    return "A" if value > 0 else "B" if value < 0 else "tie"


def compare_details(rows: Sequence[Mapping[str, Any]], records: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The A/B agreement in each tie mode over pairs people did not tie, and the choice table."""
    preferred, other, judged, people = {}, {}, [], []
    for row in rows:
        if row["human"] is None:
            continue
        a, b = (generic_metric(records[key]) for key in pair_sources(row))
        if a is None or b is None:
            continue
        judged.append(_side(a - b))
        people.append(_side(row["human"]))
        if row["human"] != 0:
            first, second = (a, b) if row["human"] > 0 else (b, a)
            preferred[row["id"]], other[row["id"]] = first, second
    measures: dict[str, Any] = {"ab_pairs": len(preferred), "people_ties": people.count("tie")}
    for tie in TIE_MODES:
        measures[f"ab_accuracy_tie_{tie}"] = ab_test(preferred, other, tie).accuracy if preferred else None
    return {"tables": [confusion_table("A/B choice", judged, people, ("A", "B", "tie"))], "measures": measures}


#: How FAGER's human A/B choices are read and matched to its verdicts (`MethodSpec.human`).
PROTOCOL = HumanProtocol(rate=rate_label, record_id=record_id, sources=pair_sources, combine=judge_margin,
                         details=compare_details, human_axis="people's preference for A (-1 B .. 1 A)",
                         judge_axis="FAGER score(A) - score(B)")
