"""Recorded answers as a judge: tests, re-scoring saved runs, and human annotations.

Answers are keyed by request content hash, or by fields of `meta` (for example
`key_fields=("item_id", "question_id")`, when the images are not the recorded ones).
A recorded value is a text, a dict (`text`, `finish_reason`, `probs`), `None` for a
failed response, or a list of these served in turn to repeated asks (scripted retries;
the last one repeats). A missing answer raises: replay never guesses.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

from ..judge import Judge, JudgeError
from ..options import OptionProbs
from ..outputs import iter_jsonl
from ..requests import Answer, Request


class ReplayJudge(Judge):
    """A judge that answers from a mapping or a JSONL file of recorded answers.

    Examples:
        Answers keyed by a `meta` field: a text, a dict with next-token probabilities, and a
        failed response (None):

        >>> from vlmjudge.requests import Request
        >>> judge = ReplayJudge({"q1": "Yes, it floats.", "q2": {"text": "No", "probs": {"Yes": 0.2, "No": 0.6}},
        ...                      "q3": None}, key_fields=["id"])
        >>> def ask(key):
        ...     return Request(text="Is anything floating without support?", meta={"id": key})
        >>> [answer.text for answer in judge.generate([ask("q1"), ask("q2")])]
        ['Yes, it floats.', 'No']
        >>> [round(p, 6) for p in judge.choice_probs([ask("q2")], ["Yes", "No"])[0].values()]
        [0.25, 0.75]
        >>> judge.choice_probs([ask("q1")], ["Yes", "No"])
        [{'Yes': 1.0, 'No': 0.0}]
        >>> judge.generate([ask("q3")])[0].finish_reason
        'error'
        >>> judge.generate([ask("q4")])
        Traceback (most recent call last):
        ...
        vlmjudge.judge.JudgeError: no recorded answer for key 'q4' (meta={'id': 'q4'})
    """

    backend = "replay"

    def __init__(self, answers: Mapping[Any, Any] | str | os.PathLike | None = None, *,
                 key_fields: Sequence[str] | None = None, model_id: str = "replay", **kwargs: Any) -> None:
        super().__init__(model_id=model_id, **kwargs)
        self.key_fields = tuple(key_fields) if key_fields else None
        if answers is None:
            raise ValueError("ReplayJudge needs recorded answers: a mapping or a JSONL path")
        self.answers: dict[Any, Any] = (dict(answers) if isinstance(answers, Mapping)
                                        else load_jsonl_answers(answers, self.key_fields))
        self._served: dict[Any, int] = defaultdict(int)
        #: Every request asked, with its operation, in order: for tests that count calls by stage.
        self.log: list[tuple[str, Request]] = []

    def key_of(self, request: Request) -> Any:
        if self.key_fields is None:
            return request.content_hash()
        missing = [f for f in self.key_fields if f not in request.meta]
        if missing:
            raise JudgeError(f"replay keys on meta fields {self.key_fields}; request lacks {missing}")
        values = tuple(request.meta[f] for f in self.key_fields)
        return values[0] if len(values) == 1 else values

    def dedupe_key(self, request: Request) -> Any:
        """The recorded key (so meta-keyed answers stay apart); None for a scripted list,
        whose repeated asks are served in turn, or a request without its key fields."""
        try:
            key = self.key_of(request)
        except JudgeError:
            return None
        return None if isinstance(self.answers.get(key), list) else key

    def _recorded(self, request: Request) -> Any:
        key = self.key_of(request)
        if key not in self.answers:
            raise JudgeError(f"no recorded answer for key {key!r} (meta={request.meta})")
        value = self.answers[key]
        if isinstance(value, list):
            turn = self._served[key]
            self._served[key] += 1
            value = value[min(turn, len(value) - 1)]
        return value

    def _account(self, op: str, chunk: list[Request]) -> None:
        self.stats.forward_batches += 1
        self.stats.images_encoded += sum(len(r.images) for r in chunk)
        self.log.extend((op, r) for r in chunk)

    def _generate(self, requests: list[Request]) -> list[Answer]:
        self._account("generate", requests)
        answers = []
        for r in requests:
            value = self._recorded(r)
            if value is None:
                answers.append(Answer("", "error", 0))
            elif isinstance(value, str):
                answers.append(Answer(value, "stop", len(value.split())))
            elif isinstance(value, dict) and "text" in value:
                answers.append(Answer.from_json(value))
            else:
                raise JudgeError(f"recorded answer for {self.key_of(r)!r} has no text: {value!r}")
        return answers

    def _choice_probs(self, requests: list[Request], options: list[str]) -> list[dict[str, float]]:
        self._account("choice_probs", requests)
        return [self._probs(r, options) for r in requests]

    def _choice_probs_raw(self, requests: list[Request], options: list[str]) -> list[dict[str, float]]:
        self._account("choice_probs", requests)
        return [self._probs(r, options, normalize=False) for r in requests]

    def _probs(self, request: Request, options: list[str], normalize: bool = True) -> OptionProbs:
        """Recorded `probs` are full-vocabulary probabilities (their total over the options is the
        option mass): served as recorded (normalize=False) or normalised over the options. A
        recorded text is one-hot on its leading option, with no mass (nothing measured it)."""
        value = self._recorded(request)
        if value is None:
            return OptionProbs()
        if isinstance(value, dict) and "probs" in value:
            probs = {o: float(value["probs"].get(o, 0.0)) for o in options}
            total = sum(probs.values())
            if total <= 0 or min(probs.values()) < 0 or (not normalize and total > 1 + 1e-6):
                raise JudgeError(f"recorded probs for {self.key_of(request)!r} are no distribution over {options}")
            out = OptionProbs.from_raw(probs, options, normalize)
            out.mass = out.mass if out.mass <= 1 else None  # recorded weights, not probabilities
            return out
        text = value if isinstance(value, str) else value.get("text") if isinstance(value, dict) else None
        chosen = first_option(text or "", options)
        if chosen is None:
            raise JudgeError(f"recorded answer {text!r} for {self.key_of(request)!r} starts with none of {options}")
        return OptionProbs({o: float(o == chosen) for o in options})


def first_option(text: str, options: Sequence[str]) -> str | None:
    """The option the answer text starts with (after spaces), longest match first.

    Examples:
        >>> first_option("  Yes, clearly.", ["Yes", "No"]), first_option("Maybe", ["Yes", "No"])
        ('Yes', None)
    """
    stripped = text.lstrip()
    for option in sorted(options, key=len, reverse=True):
        if stripped.startswith(option):
            return option
    return None


def load_jsonl_answers(path: str | os.PathLike, key_fields: Sequence[str] | None) -> dict[Any, Any]:
    """Read `{"hash": ..., ...}` or `{"meta": {...}, ...}` rows into a replay mapping.

    Examples:
        >>> import json, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "answers.jsonl")
        >>> with open(path, "w") as handle:
        ...     _ = handle.write(json.dumps({"meta": {"id": "q1"}, "text": "No"}) + "\\n")
        ...     _ = handle.write(json.dumps({"meta": {"id": "q2"}, "text": "", "finish_reason": "error"}) + "\\n")
        >>> load_jsonl_answers(path, ["id"])
        {'q1': {'text': 'No'}, 'q2': None}
    """
    answers: dict[Any, Any] = {}
    for lineno, row in iter_jsonl(path):  # a broken line is a JsonlError (a ValueError) naming file and line
        where = f"{path}:{lineno}"
        answers[_row_key(row, key_fields, where)] = _row_value(row, where)
    return answers


def _row_key(row: dict[str, Any], key_fields: Sequence[str] | None, where: str) -> Any:
    if key_fields is None:
        if "hash" not in row:
            raise ValueError(f"{where}: replay by hash needs a 'hash' field")
        return row["hash"]
    meta = row.get("meta", row)
    missing = [f for f in key_fields if f not in meta]
    if missing:
        raise ValueError(f"{where}: missing key fields {missing}")
    values = tuple(meta[f] for f in key_fields)
    return values[0] if len(values) == 1 else values


def _row_value(row: dict[str, Any], where: str) -> Any:
    if row.get("finish_reason") == "error":
        return None
    keep = {k: row[k] for k in ("text", "finish_reason", "num_tokens", "probs") if k in row}
    if not keep:
        raise ValueError(f"{where}: replay row has neither text nor probs: {row}")
    return keep


def record_answers(requests: Iterable[Request], answers: Iterable[Answer], path: str | os.PathLike,
                   key_fields: Sequence[str] | None = None) -> None:
    """Write answers as a replay JSONL file (the inverse of `load_jsonl_answers`).

    Examples:
        Recorded answers replay as the same answers:

        >>> import os, tempfile
        >>> from vlmjudge.requests import Answer, Request
        >>> path = os.path.join(tempfile.mkdtemp(), "answers.jsonl")
        >>> requests = [Request(text="Is the sky green?", meta={"id": "sky"})]
        >>> record_answers(requests, [Answer("No", num_tokens=1)], path, key_fields=["id"])
        >>> ReplayJudge(path, key_fields=["id"]).generate(requests)
        [Answer(text='No', finish_reason='stop', num_tokens=1)]
    """
    with open(path, "w", encoding="utf-8") as fh:
        for request, answer in zip(requests, answers, strict=True):
            row: dict[str, Any] = answer.to_json()
            if key_fields is None:
                row["hash"] = request.content_hash()
            else:
                row["meta"] = {f: request.meta[f] for f in key_fields}
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
