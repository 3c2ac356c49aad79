"""TIFA's arithmetic (Hu et al. 2023), with no model and no parsing.

A question counts as correct when the answer chosen equals the expected answer exactly. A prompt's
TIFA score is the share of its questions answered correctly; over a benchmark, `tifa_average` is
the mean of the prompts' scores, `tifa_stdev` their sample standard deviation, and
`accuracy_by_type` pools every question of an element type across prompts (a question counts
once per row, as TIFA's own scorer counts them).
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: (element type, correct) of one answered question.
Mark = tuple[str, bool]


def is_correct(answer: str, expected: str) -> bool:
    """Whether the chosen choice is the expected one: TIFA compares the strings exactly.

    Examples:
        >>> is_correct("surfer", "surfer"), is_correct("Surfer", "surfer")
        (True, False)
    """
    return answer == expected


def prompt_score(correct: Sequence[bool]) -> float:
    """The share of a prompt's questions answered correctly.

    Examples:
        >>> prompt_score([True, False, True, True])
        0.75
        >>> prompt_score([])
        Traceback (most recent call last):
        ...
        ValueError: a TIFA score needs at least one question
    """
    if not correct:
        raise ValueError("a TIFA score needs at least one question")
    return sum(bool(c) for c in correct) / len(correct)


def accuracy_by_type(marks: Iterable[Mark]) -> dict[str, float]:
    """The share answered correctly per element type, over all questions given (types in the order
    first seen).

    Examples:
        >>> accuracy_by_type([("color", True), ("counting", False), ("color", False), ("counting", False)])
        {'color': 0.5, 'counting': 0.0}
    """
    pooled: dict[str, list[bool]] = {}
    for element_type, correct in marks:
        pooled.setdefault(element_type, []).append(bool(correct))
    return {element_type: sum(found) / len(found) for element_type, found in pooled.items()}


def benchmark_summary(per_prompt: Mapping[str, Sequence[Mark]]) -> dict[str, Any]:
    """TIFA's benchmark numbers from each prompt's marks: `tifa_average`, `tifa_stdev` (None for
    fewer than two prompts), `accuracy_by_type` and `caption_scores`.

    Examples:
        >>> summary = benchmark_summary({"a": [("color", True), ("object", True)], "b": [("color", False)]})
        >>> summary["tifa_average"], summary["accuracy_by_type"], summary["caption_scores"]
        (0.5, {'color': 0.5, 'object': 1.0}, {'a': 1.0, 'b': 0.0})
    """
    if not per_prompt:
        raise ValueError("a TIFA summary needs at least one prompt")
    scores = {key: prompt_score([c for _, c in marks]) for key, marks in per_prompt.items()}
    values = list(scores.values())
    return {"tifa_average": statistics.mean(values),
            "tifa_stdev": statistics.stdev(values) if len(values) > 1 else None,
            "accuracy_by_type": accuracy_by_type(m for marks in per_prompt.values() for m in marks),
            "caption_scores": scores}


__all__ = ["Mark", "accuracy_by_type", "benchmark_summary", "is_correct", "prompt_score"]
