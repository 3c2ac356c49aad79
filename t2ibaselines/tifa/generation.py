"""Questions for prompts outside the QA file, written by the judge in TIFA's format and filtered as
TIFA filters its own.

TIFA had a language model list a prompt's elements and write, per element, a yes/no question and
often a multiple-choice one, each with choices, the answer and the element type; it then dropped
duplicate questions and those a question-answering model, reading the prompt alone, answered
differently. Here the judge writes them as JSON held to a schema (element types from TIFA's
list, bounded strings and lists; the answer and the other choices apart, so the answer is always
one of the choices, answer first as in TIFA's file), and the same judge reading the prompt alone
is the filter.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vlmjudge.requests import Constraint, Decoding, Request

from .answering import ask, letter_probs, read_choice, show
from .pack import TifaPack, fill
from .questions import ELEMENT_TYPES, TifaQuestion, question_from

#: Element types TIFA's generator wrote before merging them into "animal/human".
MERGED_TYPES = {"animal": "animal/human", "human": "animal/human"}


def question_schema(pack: TifaPack) -> dict[str, Any]:
    """The JSON schema the judge's questions are held to while it writes them."""
    limits = pack.generate
    text = {"type": "string", "minLength": 1, "maxLength": limits.max_chars}
    item = {"type": "object", "additionalProperties": False,
            "required": ["element", "element_type", "question", "answer", "other_choices"],
            "properties": {"element": text, "element_type": {"enum": list(ELEMENT_TYPES)}, "question": text,
                           "answer": text, "other_choices": {"type": "array", "items": text, "minItems": 1,
                                                             "maxItems": limits.max_choices - 1}}}
    return {"type": "object", "additionalProperties": False, "required": ["questions"],
            "properties": {"questions": {"type": "array", "items": item, "minItems": 1,
                                         "maxItems": limits.max_questions}}}


def generation_request(pack: TifaPack, prompt: str, item_id: str) -> Request:
    """The text-only request that asks the judge for a prompt's questions."""
    limits = pack.generate
    text = fill(limits.user, prompt=prompt, types=", ".join(ELEMENT_TYPES), max_questions=limits.max_questions,
                max_choices=limits.max_choices)
    return Request(text=text, system=limits.system or None, decoding=Decoding(max_new_tokens=limits.max_new_tokens),
                   constraint=Constraint.json_schema(question_schema(pack)),
                   meta={"item_id": item_id, "stage": "tifa-generate", "question": None})


@dataclass
class Generated:
    """A prompt's written questions that passed every check, and why each other one was dropped."""
    questions: list[TifaQuestion] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    written: int = 0


def parse_questions(text: str) -> Generated:
    """The questions of one answer in TIFA's format (choices: the answer, then the other choices)
    that are well formed (distinct choices, a known element type after TIFA's merge), first copy
    of a repeated question only.

    Examples:
        >>> answer = json.dumps({"questions": [
        ...     {"element": "dog", "element_type": "animal", "question": "is there a dog?",
        ...      "answer": "yes", "other_choices": ["no"]},
        ...     {"element": "dog", "element_type": "animal", "question": "is there a dog?",
        ...      "answer": "yes", "other_choices": ["no"]},
        ...     {"element": "red", "element_type": "color", "question": "what color?",
        ...      "answer": "red", "other_choices": ["blue", "red"]}]})
        >>> found = parse_questions(answer)
        >>> [q.element_type for q in found.questions], found.written, len(found.dropped)
        (['animal/human'], 3, 2)
    """
    try:
        data = json.loads(text, strict=False)
    except json.JSONDecodeError as error:
        return Generated(dropped=[f"the judge's questions are not JSON ({error.msg})"])
    items = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return Generated(dropped=["the judge's answer holds no \"questions\" list"])
    found = Generated(written=len(items))
    seen: set[str] = set()
    for number, item in enumerate(items):
        try:
            question = question_from(tifa_layout(item), f"question {number}")
        except ValueError as error:
            found.dropped.append(str(error))
            continue
        if question.element_type not in ELEMENT_TYPES:
            found.dropped.append(f"question {number}: element type {question.element_type!r} is not TIFA's")
        elif question.question in seen:
            found.dropped.append(f"question {number}: asked already")
        else:
            seen.add(question.question)
            found.questions.append(question)
    return found


def tifa_layout(item: Any) -> Any:
    """A written question in TIFA's layout: choices are the answer then the other choices, and an
    "animal" or "human" element type is TIFA's merged "animal/human"."""
    if not isinstance(item, dict):
        return item
    others = item.get("other_choices")
    out = {k: v for k, v in item.items() if k != "other_choices"}
    if isinstance(others, list):
        out["choices"] = [item.get("answer"), *others]
    if out.get("element_type") in MERGED_TYPES:
        out["element_type"] = MERGED_TYPES[out["element_type"]]
    return out


def write_questions(judge: Any, pack: TifaPack, prompts: Sequence[str], ids: Sequence[str],
                    verify: bool = True) -> list[Generated]:
    """Each prompt's questions: written by the judge, then (`verify`) kept only where the judge,
    reading the prompt alone, picks the expected answer."""
    answers = judge.generate([generation_request(pack, p, i) for p, i in zip(prompts, ids)])
    found = []
    for answer in answers:
        if not answer.ok:
            found.append(Generated(dropped=["the judge gave no answer (a failed request)"]))
        else:
            found.append(parse_questions(answer.text))
            if answer.finish_reason == "length":
                found[-1].dropped.append("the answer ran out of tokens; questions cut off were lost")
    if verify:
        _verify(judge, pack, prompts, ids, found)
    return found


def _verify(judge: Any, pack: TifaPack, prompts: Sequence[str], ids: Sequence[str], found: list[Generated]) -> None:
    """Drop each written question whose expected answer the judge does not pick from the prompt alone."""
    asked = [(k, show(pack, q)) for k, generated in enumerate(found) for q in generated.questions]
    if not asked:
        return
    requests = [ask(pack.verify, pack, shown, [], {"item_id": ids[k], "stage": "tifa-verify",
                                                   "question": shown.question.question}, prompt=prompts[k])
                for k, shown in asked]
    probs = letter_probs(judge, requests, [shown for _, shown in asked])
    kept: dict[int, list[TifaQuestion]] = {k: [] for k in range(len(found))}
    for (k, shown), p in zip(asked, probs):
        choice = read_choice(p, shown)
        if choice.answer == shown.question.answer:
            kept[k].append(shown.question)
        else:
            why = choice.error or f"from the prompt alone the judge picks {choice.answer!r}"
            found[k].dropped.append(f"{shown.question.question!r}: expected {shown.question.answer!r}, but {why}")
    for k, generated in enumerate(found):
        generated.questions = kept[k]


__all__ = ["Generated", "generation_request", "parse_questions", "question_schema", "tifa_layout", "write_questions"]
