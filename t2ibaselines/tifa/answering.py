"""Multiple-choice answering by the judge: a question's choices shown as lettered lines, the answer
the letter with the highest probability.

A letter is one token on the judge's tokenizers, so `choice_probs` over the letters is exact on
every backend (TIFA's own VQA models answered freely and a sentence encoder picked the nearest
choice). Where a backend saw only some letters (a server's top-k), the answer stands only if a
seen letter beats every unseen one's upper bound; otherwise, as for an exact tie, the question has
no answer and says why.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vlmjudge.options import OptionProbs
from vlmjudge.requests import Request

from .pack import AskPrompt, TifaPack, fill
from .questions import TifaQuestion


@dataclass
class Shown:
    """A question as shown: its choices in the order shown and the letter of each."""
    question: TifaQuestion
    choices: list[str]
    letters: list[str]


def show(pack: TifaPack, question: TifaQuestion) -> Shown:
    """The question's choices in the pack's order (`TifaPack.shown_order`), lettered."""
    order = pack.shown_order(question.question, question.choices)
    choices = [question.choices[i] for i in order]
    if len(choices) > len(pack.letters):
        raise ValueError(f"question {question.question!r} has {len(choices)} choices; the pack has only "
                         f"{len(pack.letters)} letters ({pack.letters})")
    return Shown(question, choices, list(pack.letters[:len(choices)]))


def ask(template: AskPrompt, pack: TifaPack, shown: Shown, images: list[Any], meta: dict[str, Any],
        **values: Any) -> Request:
    """The request for one shown question (`values` fill the template's other fields, e.g. `prompt`)."""
    text = fill(template.user, question=shown.question.question, choices=pack.choice_lines(shown.choices), **values)
    return Request(images=images, text=text, system=template.system or None, prefix=template.prefix, meta=meta)


def letter_probs(judge: Any, requests: Sequence[Request], shown: Sequence[Shown]) -> list[OptionProbs]:
    """The letters' probabilities for each request, in order: one `choice_probs` call per number
    of choices (a call asks one set of options), each keeping the requests' order."""
    out: list[OptionProbs | None] = [None] * len(requests)
    for size in sorted({len(s.letters) for s in shown}):
        members = [n for n, s in enumerate(shown) if len(s.letters) == size]
        got = judge.choice_probs([requests[n] for n in members], shown[members[0]].letters)
        for n, probs in zip(members, got, strict=True):
            out[n] = probs
    return out  # type: ignore[return-value]


@dataclass
class Choice:
    """What the judge chose: the choice (None when it cannot be told), each choice's probability
    (normalised over the letters; for an unseen letter its upper bound), and why there is no answer."""
    answer: str | None
    probs: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    low_mass: bool = False
    bounded: list[str] = field(default_factory=list)


def read_choice(probs: OptionProbs, shown: Shown) -> Choice:
    """The choice the judge's letter probabilities pick.

    Examples:
        >>> q = TifaQuestion(question="what animal?", choices=["dog", "cat"], answer="dog", element_type="animal/human")
        >>> shown = Shown(q, ["cat", "dog"], ["A", "B"])
        >>> read_choice(OptionProbs({"A": 0.2, "B": 0.8}, mass=0.9), shown).answer
        'dog'
        >>> read_choice(OptionProbs({"A": 0.5, "B": 0.5}, mass=0.9), shown).error
        'a tie between cat and dog'
        >>> cut = read_choice(OptionProbs({"A": 0.7, "B": 0.3}, mass=0.6, bounds={"B": 0.3}), shown)
        >>> cut.answer, cut.bounded
        ('cat', ['dog'])
        >>> read_choice(OptionProbs({"A": 0.4, "B": 0.6}, mass=0.4, bounds={"B": 0.6}), shown).error
        'the backend saw only some letters and an unseen one may be likelier (top log-probabilities truncated)'
    """
    if not probs:
        return Choice(None, error="the judge gave no answer (a failed request)")
    by_choice = {choice: float(probs[letter]) for choice, letter in zip(shown.choices, shown.letters)}
    bounded = [choice for choice, letter in zip(shown.choices, shown.letters) if letter in probs.bounds]
    seen = {choice: p for choice, p in by_choice.items() if choice not in bounded}
    chosen = Choice(None, by_choice, low_mass=probs.low_mass, bounded=bounded)
    if not seen:
        chosen.error = "the backend saw none of the letters (top log-probabilities truncated)"
        return chosen
    ranked = sorted(seen.items(), key=lambda kv: kv[1], reverse=True)
    best, best_p = ranked[0]
    if len(ranked) > 1 and ranked[1][1] == best_p:
        ties = [choice for choice, p in ranked if p == best_p]
        chosen.error = f"a tie between {' and '.join(sorted(ties))}"
    elif any(by_choice[choice] >= best_p for choice in bounded):
        chosen.error = ("the backend saw only some letters and an unseen one may be likelier "
                        "(top log-probabilities truncated)")
    else:
        chosen.answer = best
    return chosen


__all__ = ["Choice", "Shown", "ask", "letter_probs", "read_choice", "show"]
