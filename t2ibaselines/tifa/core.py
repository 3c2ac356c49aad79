"""TIFA over a judge: each image's questions answered as multiple choice, scored as TIFA scores them.

An image's questions come from, in this order: the batch's own `questions` column, the QA file
(the released `tifa_v1.0_question_answers.json` or one in its layout), matched by the image's id
(with or without its suffix, or its folder's name) or else by its prompt, and last the judge,
which writes them for the prompt (`generation`). All questions of one image are asked together,
the image first in each request, so a backend that shares prefixes encodes the image once.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlmjudge.images import to_pil

from ..intake import id_keys

from .answering import ask, letter_probs, read_choice, show
from .generation import write_questions
from .pack import TifaPack, load_pack
from .questions import TifaQuestion, as_questions, read_qa_file
from .records import QuestionResult, TifaRecord

#: Bumped when the score of the same pack, questions and judge changes.
METHOD_VERSION = "tifa-1"


class QuestionBank:
    """The QA file's questions by text id and by caption."""

    def __init__(self, qa: str | os.PathLike | Mapping[str, Any]) -> None:
        if isinstance(qa, (str, os.PathLike)):
            self.entries = read_qa_file(qa)
            self.source, self.sha256 = os.fspath(qa), hashlib.sha256(Path(qa).read_bytes()).hexdigest()
        elif isinstance(qa, Mapping):
            self.source, self.sha256 = "<mapping>", None
            self.entries = {}
            for key, entry in qa.items():
                if not (isinstance(entry, Sequence) and len(entry) == 2 and isinstance(entry[0], str)):
                    raise ValueError(f"qa[{key!r}] must be (caption, questions)")
                self.entries[str(key)] = (entry[0], as_questions(entry[1], f"qa[{key!r}]"))
        else:
            raise TypeError(f"qa must be a QA file path or a mapping, got {type(qa).__name__}")
        self.by_caption: dict[str, list[str]] = {}
        for text_id, (caption, _) in self.entries.items():
            self.by_caption.setdefault(caption.strip(), []).append(text_id)

    def lookup(self, item_id: str, prompt: str) -> list[TifaQuestion] | None:
        """The questions for an image, or None when the file has none; a ValueError when its id
        names a text whose caption is not the prompt, or the prompt is several texts' caption."""
        for key in id_keys(item_id):
            if key in self.entries:
                caption, questions = self.entries[key]
                if caption.strip() != prompt.strip():
                    raise ValueError(f"the QA file's text {key!r} is {caption!r}, not this image's prompt {prompt!r}")
                return questions
        matches = self.by_caption.get(prompt.strip(), [])
        sets = {tuple(self.entries[m][1]) for m in matches}
        if len(sets) > 1:
            raise ValueError(f"the prompt is the caption of {len(matches)} texts with different questions "
                             f"({', '.join(matches[:4])}); name the image after its text id")
        return self.entries[matches[0]][1] if matches else None


class Tifa:
    """TIFA scores of images against their prompts over a judge.

    Args:
        judge: a `vlmjudge` Judge that gives option probabilities (`choice_probs`).
        pack: TIFA's prompt pack (`t2ibaselines.tifa.load_pack`): None for the default, a shipped
            name, a JSON path or a dict.
        qa: the QA file (a path, or a mapping text id -> (caption, questions)); None: none.
        generate: write questions with the judge for prompts the QA file lacks (else those images
            fail).
        verify: keep only written questions whose answer the judge picks from the prompt alone.
    """

    inputs = ("image", "prompt")

    def __init__(self, judge: Any, pack: TifaPack | Mapping[str, Any] | str | None = None, *,
                 qa: str | os.PathLike | Mapping[str, Any] | None = None, generate: bool = True,
                 verify: bool = True) -> None:
        if judge is None or not hasattr(judge, "choice_probs"):
            raise TypeError(f"TIFA needs a judge with choice_probs (a vlmjudge Judge), got {type(judge).__name__}")
        for name, flag in (("generate", generate), ("verify", verify)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be true or false, got {flag!r}")
        self.judge, self.pack = judge, load_pack(pack)
        self.bank = QuestionBank(qa) if qa is not None else None
        self.generate, self.verify = generate, verify
        if self.bank is not None:
            wide = [f"{text_id}: {q.question!r}" for text_id, (_, questions) in self.bank.entries.items()
                    for q in questions if self._too_many(q)]
            if wide:
                raise ValueError(f"{len(wide)} question(s) of the QA file have more choices than the pack's "
                                 f"{len(self.pack.letters)} letters ({self.pack.letters}), e.g. {wide[0]}")

    def _too_many(self, question: TifaQuestion) -> bool:
        return len(question.choices) > len(self.pack.letters)

    def score(self, images: Sequence[Any], prompts: Sequence[str], ids: Sequence[Any] | None = None,
              questions: Sequence[Any] | None = None) -> list[TifaRecord]:
        """A record per image, in order; `questions` gives an image its own (None: look them up)."""
        images, prompts = list(images), list(prompts)
        ids = [str(i) for i in (range(len(images)) if ids is None else ids)]
        given = list(questions) if questions is not None else [None] * len(images)
        if not images:
            raise ValueError("nothing to score: no images")
        if not len(images) == len(prompts) == len(ids) == len(given):
            raise ValueError(f"{len(images)} images, {len(prompts)} prompts, {len(ids)} ids and {len(given)} "
                             "question lists: one each per item")
        for i, prompt in enumerate(prompts):
            if not isinstance(prompt, str) or not prompt.strip():
                raise ValueError(f"prompt {i} must be a non-empty string, got {prompt!r}")
        records = [self._questions(ids[i], prompts[i], given[i]) for i in range(len(images))]
        self._write_missing(records)
        self._answer(images, records)
        return records

    def _questions(self, item_id: str, prompt: str, given: Any) -> TifaRecord:
        """A record holding the image's questions from the batch or the QA file (none yet: generated)."""
        if given is not None:
            found = as_questions(given, f"item {item_id!r}")
            wide = [q.question for q in found if self._too_many(q)]
            if wide:
                return TifaRecord(item_id, prompt, "given", errors=[
                    f"question {wide[0]!r} has more choices than the pack's letters ({self.pack.letters})"])
            return TifaRecord(item_id, prompt, "given", [_result(q) for q in found])
        try:
            found = self.bank.lookup(item_id, prompt) if self.bank is not None else None
        except ValueError as error:
            return TifaRecord(item_id, prompt, "qa_file", errors=[str(error)])
        if found is not None:
            return TifaRecord(item_id, prompt, "qa_file", [_result(q) for q in found])
        if not self.generate:
            return TifaRecord(item_id, prompt, "generated", errors=["no questions for this prompt (not in the QA "
                                                                    "file) and question writing is off"])
        return TifaRecord(item_id, prompt, "generated")

    def _write_missing(self, records: list[TifaRecord]) -> None:
        """Questions written by the judge for the records that still have none."""
        todo = [r for r in records if r.source == "generated" and not r.errors]
        if not todo:
            return
        written = write_questions(self.judge, self.pack, [r.prompt for r in todo], [r.id for r in todo], self.verify)
        for record, generated in zip(todo, written, strict=True):
            record.questions = [_result(q) for q in generated.questions]
            record.generation = {"written": generated.written, "kept": len(generated.questions),
                                 "dropped": generated.dropped, "verified": self.verify}
            if not record.questions:
                record.errors.append("the judge wrote no usable questions for this prompt")

    def _answer(self, images: list[Any], records: list[TifaRecord]) -> None:
        """Every question of every record asked with its image, answers read into the records."""
        asked, requests = [], []
        for index, record in enumerate(records):
            if not record.questions:
                continue
            image = to_pil(images[index], index=index)  # one object per image: hashed once for all its questions
            for result in record.questions:
                shown = show(self.pack, TifaQuestion(question=result.question, choices=result.choices,
                                                     answer=result.expected, element_type=result.element_type))
                result.shown = shown.choices
                asked.append((result, shown))
                requests.append(ask(self.pack.answer, self.pack, shown, [image],
                                    {"item_id": record.id, "stage": "tifa", "question": result.question}))
        if not requests:
            return
        for (result, shown), probs in zip(asked, letter_probs(self.judge, requests, [s for _, s in asked])):
            choice = read_choice(probs, shown)
            result.answer, result.probs, result.low_mass, result.error = (choice.answer, choice.probs,
                                                                        choice.low_mass, choice.error)
        for record in records:
            unanswered = sum(q.answer is None for q in record.questions)
            if unanswered:
                record.errors.append(f"{unanswered} of {len(record.questions)} questions got no answer")

    def score_batch(self, batch: Mapping[str, Sequence[Any]]) -> list[TifaRecord]:
        """The `MethodSpec` entry: columns `image`, `prompt`, optionally `id` and `questions`."""
        missing = [column for column in self.inputs if column not in batch]
        if missing:
            raise ValueError(f"tifa: batch lacks required columns {missing} (has {sorted(batch)})")
        return self.score(batch["image"], batch["prompt"], batch.get("id"), batch.get("questions"))

    def manifest(self) -> dict[str, Any]:
        """What produced the records: method, judge, pack, QA file and question writing."""
        bank = self.bank
        return {"method": "tifa", "method_version": METHOD_VERSION, **self.judge.manifest(),
                "pack_version": self.pack.version, "pack_sha256": self.pack.sha256,
                "qa_file": bank.source if bank else None, "qa_sha256": bank.sha256 if bank else None,
                "generate": self.generate, "verify": self.verify}


def _result(question: TifaQuestion) -> QuestionResult:
    return QuestionResult(question.question, list(question.choices), question.answer, question.element_type,
                          question.element)


__all__ = ["METHOD_VERSION", "QuestionBank", "Tifa"]
