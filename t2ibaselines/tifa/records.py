"""TIFA's records: one per image, with every question it was asked and how it was answered.

A record is scored only when every question got an answer: its score is then the share marked
correct (`scoring.prompt_score`). A question without an answer (a failed request, an exact tie,
letters a server did not return) fails the record rather than shrinking its denominator.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vlmjudge.record_schema import ScoredOrFailed

from .scoring import accuracy_by_type, prompt_score


@dataclass
class QuestionResult:
    """One question as asked and answered: `choices` in TIFA's order, `shown` in the order the
    judge saw them, `probs` per choice (normalised over the letters), `answer` the choice picked."""

    question: str
    choices: list[str]
    expected: str
    element_type: str
    element: str = ""
    shown: list[str] = field(default_factory=list)
    answer: str | None = None
    probs: dict[str, float] = field(default_factory=dict)
    low_mass: bool = False
    error: str | None = None

    @property
    def correct(self) -> bool | None:
        """Whether the answer is the expected one; None when there is no answer."""
        return None if self.answer is None else self.answer == self.expected

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "choices": list(self.choices), "expected": self.expected,
                "answer": self.answer, "correct": self.correct, "element": self.element,
                "element_type": self.element_type, "shown": list(self.shown), "probs": dict(self.probs),
                "low_mass": self.low_mass, "error": self.error}


@dataclass
class TifaRecord(ScoredOrFailed):
    """One image: its prompt, where its questions came from (`qa_file`, `given`, `generated`), the
    questions and their answers, and what went wrong (`errors`).

    Examples:
        >>> yes = QuestionResult("is there a dog?", ["yes", "no"], "yes", "animal/human", answer="yes")
        >>> red = QuestionResult("what color is the dog?", ["red", "blue"], "red", "color", answer="blue")
        >>> record = TifaRecord(id="a.png", prompt="a red dog", source="qa_file", questions=[yes, red])
        >>> record.score, record.status, record.to_json()["accuracy_by_type"]
        (0.5, 'scored', {'animal/human': 1.0, 'color': 0.0})
        >>> TifaRecord(id="b.png", prompt="a dog", source="generated", errors=["no usable questions"]).status
        'failed'
    """

    id: str
    prompt: str
    source: str
    questions: list[QuestionResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    generation: dict[str, Any] | None = None

    @property
    def score(self) -> float | None:
        """The share of questions answered correctly; None without questions or with an unanswered one."""
        if not self.questions or any(q.correct is None for q in self.questions):
            return None
        return prompt_score([bool(q.correct) for q in self.questions])

    def to_json(self) -> dict[str, Any]:
        """The record in the shared layout: id, status, score, then TIFA's own fields."""
        answered = [q for q in self.questions if q.correct is not None]
        return {"id": self.id, "status": self.status, "score": self.score, "valid": self.valid,
                "prompt": self.prompt, "source": self.source, "n_questions": len(self.questions),
                "n_correct": sum(bool(q.correct) for q in answered),
                "accuracy_by_type": accuracy_by_type((q.element_type, bool(q.correct)) for q in answered),
                "questions": [q.to_json() for q in self.questions], "errors": list(self.errors),
                "generation": self.generation}


__all__ = ["QuestionResult", "TifaRecord"]
