"""FAGER as a registered method (`vlmjudge.methods` entry point `fager = fager.spec:SPEC`), so the
CLI, the demo app and the integrations find it without the core importing it.

A batch has `image` and `prompt` columns, and optionally `references` (per item: an image,
a list of images or None), `qa_set` (per item: a QASet, a dict, its JSON, QA.csv text, or
None to build one) and `id` (names the item for reference lookup, replay and reports).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from vlmjudge.registry import DEFAULT_JUDGE_MODEL, MethodSpec, renders
from vlmjudge.text import format_score

from .annotation import ANNOTATION
from .core import Fager
from .human import PROTOCOL
from .qa_store import QA_COLUMNS, parse_qa_csv
from .records import Verdict
from .references import MappingReferences
from .schema import QASet
from .scoring import GatingPolicy
from .statistics import STATISTICS


class FagerRecord:
    """One scored image: `score` is the overall FAGER score (0-100), None when unscorable, and
    `status` the shared one its JSON form carries (`vlmjudge.record_schema`)."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.status = verdict.status
        self.score = verdict.score
        self.valid = verdict.score is not None

    def to_json(self) -> dict[str, Any]:
        return self.verdict.model_dump(mode="json")


class FagerScorer:
    """`score_batch` over a Fager pipeline: QA sets given per item are used, the rest are built."""

    def __init__(self, fager: Fager) -> None:
        self.fager = fager

    def score_batch(self, batch: Mapping[str, Sequence[Any]]) -> list[FagerRecord]:
        n = SPEC.check_batch(batch)
        images, prompts = list(batch["image"]), list(batch["prompt"])
        ids = [str(i) for i in batch["id"]] if "id" in batch else [str(i) for i in range(n)]
        given = [parse_qa_value(v, p) for v, p in zip(batch.get("qa_set", [None] * n), prompts)]
        references = batch.get("references")
        provider = MappingReferences({ids[i]: references[i] for i in range(n) if references[i] is not None}) \
            if references is not None else None
        verdicts: list[Verdict | None] = [None] * n
        groups = {"given": [i for i in range(n) if given[i] is not None],
                  "built": [i for i in range(n) if given[i] is None]}
        for kind, members in groups.items():
            if not members:
                continue
            got = self.fager.score([images[i] for i in members], [prompts[i] for i in members],
                                   qa_sets=[given[i].model_copy(update={"index": ids[i]}) for i in members]
                                   if kind == "given" else None,
                                   ids=[ids[i] for i in members], references=provider)
            for i, verdict in zip(members, got, strict=True):  # one verdict per image, or fail loudly
                verdicts[i] = verdict
        return [FagerRecord(v) for v in verdicts]


def parse_qa_value(value: Any, prompt: str) -> QASet | None:
    """One item's QA set from a QASet, a dict, JSON text or QA.csv text (the set for `prompt`)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, QASet):
        return value
    if isinstance(value, Mapping):
        return QASet.model_validate(value)
    if not isinstance(value, str):
        raise TypeError(f"qa_set must be a QASet, a dict, JSON or QA.csv text, got {type(value).__name__}")
    text = value.strip()
    if text.startswith("{"):
        return QASet.model_validate(json.loads(text))
    if text.startswith(",".join(QA_COLUMNS[:2])):
        sets = [s for s in parse_qa_csv(text + "\n") if s.prompt == prompt]
        if len(sets) != 1:
            raise ValueError(f"QA.csv text holds {len(sets)} QA sets for prompt {prompt!r}; expected one")
        return sets[0]
    raise ValueError("qa_set text must be a QASet JSON object or QA.csv text with its header")


def build(judge: Any, text_judge: Any = None, regenerate_threshold: float = 20.0, keep_threshold: float = 95.0,
          inclusive: bool = True, **config: Any) -> FagerScorer:
    """A scorer over `judge`; config as Fager's keywords (pack, store, references, chunk_size, ...)
    plus the gate's thresholds."""
    policy = GatingPolicy(regenerate_threshold=regenerate_threshold, keep_threshold=keep_threshold,
                          inclusive=inclusive)
    return FagerScorer(Fager(judge, text_judge, policy=policy, **config))


@renders("fager", FagerRecord)
def render(record: FagerRecord) -> dict[str, Any]:
    """Score text and a markdown account: level scores, decision, feedback, every question."""
    v = record.verdict
    fmt = (lambda s: "-" if s is None else format_score(s))
    if v.score is None:
        reason = v.provenance.get("qa_error") or ("no question could be answered" if v.counts.failed
                                                  else "no questions")
        score_text = "n/a"
        lines = [f"**FAGER**: no score ({reason})."]
    else:
        score_text = f"{format_score(v.score)} ({v.decision or 'undecided'})"
        lines = [f"**FAGER score** {format_score(v.score)} / 100, decision **{v.decision or 'undecided'}**", ""]
    ls = v.level_scores
    lines += ["", f"Level 1: {fmt(ls.level_1)} · Level 2: {fmt(ls.level_2)} · Level 3: {fmt(ls.level_3)}"
              + (f" (skipped: {', '.join(v.gating.skipped_levels)})" if v.gating.skipped_levels else "")]
    if v.feedback:
        label = "Regeneration constraint" if v.decision == "regenerate" else "Edit instruction"
        lines += ["", f"**{label}:** {v.feedback}"]
    asked = [q for q in v.questions if q.status != "skipped"]
    if asked:
        lines += ["", "| level | question | answer | rationale |", "|---|---|---|---|"]
        for q in asked:
            answer = q.answer if q.status == "answered" else "unreadable"
            lines.append(f"| {q.level[-1]} | {_cell(q.question)} | {answer} | {_cell(q.rationale)} |")
    if v.counts.failed:
        lines += ["", f"_{v.counts.failed} answer(s) could not be read; they are left out of the scores._"]
    return {"score_text": score_text, "markdown": "\n".join(lines)}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


#: FAGER scores lie in [0, 100]; `normalize` maps them linearly to [0, 1].
SPEC = MethodSpec(
    name="fager", build=build, render=render, inputs=("image", "prompt"),
    optional_inputs=("references", "qa_set", "id"), score_range=(0.0, 100.0), default_model=DEFAULT_JUDGE_MODEL,
    human=PROTOCOL,
    description="Factuality against a verified three-level rubric: yes/no/unknown questions per fact, "
                "level-1 gate, keep/edit/regenerate with feedback. Score 0-100.",
    statistics=STATISTICS,
    annotation=ANNOTATION,
)

__all__ = ["FagerRecord", "FagerScorer", "SPEC", "build", "parse_qa_value", "render"]
