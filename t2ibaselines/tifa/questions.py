"""TIFA's question-answer pairs: one question, its choices, the expected answer and the element
it checks, as the released `tifa_v1.0_question_answers.json` lays them out.

That file is a JSON list with one object per question: `id` (the text id, e.g. "coco_301091"),
`caption` (the prompt), `question`, `choices`, `answer`, `element_type`, `element` (and, for COCO
captions, `coco_val_id`). `read_qa_file` reads it, or a file of one's own in the same layout,
into the questions of each text id; anything else is one ValueError naming the file and entry.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

#: TIFA v1.0's element types (its question generator merges "animal" and "human").
ELEMENT_TYPES = ("object", "animal/human", "food", "activity", "attribute", "counting", "color", "material",
                 "spatial", "location", "shape", "other")
#: Keys every entry of the released file has.
QA_KEYS = ("id", "caption", "question", "choices", "answer", "element_type", "element")


class TifaQuestion(BaseModel):
    """One multiple-choice question about a prompt, in TIFA's terms.

    Examples:
        >>> q = TifaQuestion(question="is this a surfer?", choices=["yes", "no"], answer="yes",
        ...                  element_type="animal/human", element="surfer")
        >>> q.answer in q.choices
        True
        >>> TifaQuestion(question="what?", choices=["a", "b"], answer="c", element_type="object")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for TifaQuestion
        ...
    """

    model_config = ConfigDict(extra="ignore", frozen=True)
    question: str = Field(min_length=1)
    choices: tuple[str, ...] = Field(min_length=2)
    answer: str = Field(min_length=1)
    element_type: str = Field(min_length=1)
    element: str = ""

    @field_validator("question", "answer", "element_type")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @model_validator(mode="after")
    def _answer_among_choices(self) -> "TifaQuestion":
        if any(not c.strip() for c in self.choices) or len(set(self.choices)) != len(self.choices):
            raise ValueError(f"choices must be distinct and non-blank, got {list(self.choices)}")
        if self.answer not in self.choices:
            raise ValueError(f"answer {self.answer!r} is not one of the choices {list(self.choices)}")
        return self

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "choices": list(self.choices), "answer": self.answer,
                "element_type": self.element_type, "element": self.element}


def question_from(item: Any, where: str) -> TifaQuestion:
    """One question from a dict in TIFA's layout (or a `TifaQuestion`); a one-line ValueError
    naming `where` and the field otherwise."""
    if isinstance(item, TifaQuestion):
        return item
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: expected a question object, got {type(item).__name__}")
    try:
        return TifaQuestion.model_validate(item)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise ValueError(f"{where}: {field + ': ' if field else ''}{message}") from None


def as_questions(value: Any, where: str) -> list[TifaQuestion]:
    """Questions given in TIFA's layout (dicts or `TifaQuestion`s); a ValueError naming `where`."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ValueError(f"{where}: questions must be a list of TIFA question objects, got {type(value).__name__}")
    out = [question_from(item, f"{where}, question {number}") for number, item in enumerate(value)]
    if not out:
        raise ValueError(f"{where}: no questions")
    return out


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def read_qa_file(path: str | os.PathLike) -> dict[str, tuple[str, list[TifaQuestion]]]:
    """text id -> (caption, its questions in file order), from a file in the released layout.

    Examples:
        >>> import json, tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "qa.json"
        >>> entry = {"id": "coco_1", "caption": "a surfer", "question": "is this a surfer?",
        ...          "choices": ["yes", "no"], "answer": "yes", "element_type": "animal/human", "element": "surfer"}
        >>> _ = path.write_text(json.dumps([entry]))
        >>> caption, questions = read_qa_file(path)["coco_1"]
        >>> caption, questions[0].answer
        ('a surfer', 'yes')
        >>> _ = path.write_text(json.dumps({"coco_1": entry}))
        >>> read_qa_file(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: ...qa.json: expected a JSON list of question objects (TIFA's tifa_v1.0_question_answers.json layout), got an object
    """
    source = Path(path)
    if source.is_dir():
        raise ValueError(f"{source} is a folder; give the QA file itself (tifa_v1.0_question_answers.json)")
    if not source.is_file():
        raise ValueError(f"no such QA file: {source}")
    try:
        data = json.loads(source.read_text(encoding="utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        raise ValueError(f"{source}: not a UTF-8 JSON file") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{source}: not valid JSON ({error.msg}, line {error.lineno})") from None
    except ValueError as error:
        raise ValueError(f"{source}: {error}") from None
    if not isinstance(data, list):
        kind = "an object" if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{source}: expected a JSON list of question objects (TIFA's "
                         f"tifa_v1.0_question_answers.json layout), got {kind}")
    if not data:
        raise ValueError(f"{source}: holds no questions")
    found: dict[str, tuple[str, list[TifaQuestion]]] = {}
    for number, entry in enumerate(data):
        where = f"{source} entry {number}"
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where}: expected a question object, got {type(entry).__name__}")
        missing = [key for key in QA_KEYS if key not in entry]
        if missing:
            raise ValueError(f"{where}: missing {missing} (TIFA's layout has {', '.join(QA_KEYS)})")
        if not isinstance(entry["id"], (str, int)) or isinstance(entry["id"], bool) or not isinstance(
                entry["caption"], str) or not str(entry["id"]).strip():
            raise ValueError(f"{where}: id must be a non-empty string and caption a string")
        text_id = str(entry["id"])
        question = question_from(entry, where)
        caption, questions = found.setdefault(text_id, (entry["caption"], []))
        if caption != entry["caption"]:
            raise ValueError(f"{where}: id {text_id!r} has two captions ({caption!r} and {entry['caption']!r})")
        questions.append(question)
    return found


__all__ = ["ELEMENT_TYPES", "QA_KEYS", "TifaQuestion", "as_questions", "question_from", "read_qa_file"]
