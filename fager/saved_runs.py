"""Saved and released FAGER runs: read details.jsonl as Verdicts, re-score it, read and write
summary.csv, pair two runs' scores for the Factual A/B test, and read the items CSV a run starts from.

Re-scoring uses only the recorded per-question answers, so a saved run can be checked
against the project's scoring or re-decided under other thresholds without a model.
A recorded answer outside yes/no/unknown becomes a parse failure, as a live one would.
"""
from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from vlmjudge.outputs import JsonlError, iter_jsonl, write_records

from .records import AnswerCounts, Gating, LevelScores, ParseFailure, QuestionResult, Verdict, status_of
from .schema import ANSWERS, LEVELS, Category, Decision, Importance, Level, QuestionAnswer
from .scoring import DEFAULT_POLICY, GatingPolicy, score_answers

RELEASED_SUMMARY_COLUMNS: tuple[str, ...] = (
    "image_file", "index", "decision", "level_1_score", "level_2_score", "level_3_score", "overall_score",
    "n_total", "n_yes", "n_no", "n_unknown", "regenerate_prompt", "edit_instruction",
)
# The released columns, then the parse-failure count the release did not have.
SUMMARY_COLUMNS: tuple[str, ...] = (*RELEASED_SUMMARY_COLUMNS, "n_failed")


class ReplayFormatError(ValueError):
    """A details.jsonl or summary.csv file does not follow the released layout."""


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _ReleasedQuestion(_Loose):
    level: Level
    category: Category
    importance: Importance
    question: str
    answer: str | None
    rationale: str | None = ""
    source_fact: str
    score: float | None = None


class _ReleasedGating(_Loose):
    evaluated_levels: list[Level]
    skipped_levels: list[Level]
    level_1_score: float | None
    decision: Decision
    regenerate_threshold: float
    keep_threshold: float


class _ReleasedScores(_Loose):
    overall_score: float | None
    level_scores: dict[Level, float | None]


class _ReleasedNextStep(_Loose):
    decision: Decision
    regenerate_prompt: str | None = None
    edit_instruction: str | None = None


class _ReleasedRecord(_Loose):
    index: int | str
    image_id: str
    original_prompt: str
    gating: _ReleasedGating
    scores: _ReleasedScores
    answer_counts: dict[str, int]
    per_question: list[_ReleasedQuestion]
    next_step: _ReleasedNextStep


def read_details(path: str | os.PathLike) -> list[Verdict]:
    """Load a details.jsonl as Verdicts holding the scores and decisions as recorded.

    Each line is either a released record (it has `per_question`) or a Verdict as
    written by `write_verdicts`. A top-level `resolution_note` (how older distributed-runner files
    carry a Verdict's low-resolution flag) moves into the provenance, where `fager score` and the
    runner now keep it (`vlmjudge.outputs.with_resolution_note`).
    """
    verdicts = []
    try:
        for line_no, record in iter_jsonl(path):
            verdicts.append(_details_verdict(record, f"{path}:{line_no}"))
    except JsonlError as error:  # not JSON, or not an object: already named by file and line
        raise ReplayFormatError(str(error)) from None
    return verdicts


def _details_verdict(record: dict, where: str) -> Verdict:
    """One details.jsonl object as a Verdict, its top-level resolution_note moved into the provenance."""
    try:
        note = record.pop("resolution_note", None)
        if "per_question" not in record and "questions" in record:
            verdict = Verdict.model_validate(record)
        else:
            verdict = record_to_verdict(record)
    except (ValidationError, ValueError, TypeError, RecursionError) as error:
        raise ReplayFormatError(f"{where}: {type(error).__name__}: {str(error)[:200]}") from None
    if note:
        verdict = verdict.model_copy(update={"provenance": {**verdict.provenance, "resolution_note": note}})
    return verdict


def write_verdicts(verdicts: Iterable[Verdict], path: str | os.PathLike) -> None:
    """Write Verdicts as JSON lines in the shared record layout (id, status, score first), the project's
    own details.jsonl (read back by read_details)."""
    write_records(path, (verdict.model_dump(mode="json") for verdict in verdicts))


def record_to_verdict(record: dict) -> Verdict:
    """One released details record as a Verdict, its recorded scores untouched."""
    if not isinstance(record, dict):
        raise ValueError(f"a details record must be a JSON object, got {type(record).__name__}")
    released = _ReleasedRecord.model_validate(record)
    if released.next_step.decision != released.gating.decision:
        raise ValueError(f"gating decision {released.gating.decision!r} differs from next step "
                         f"{released.next_step.decision!r}")
    questions, failures = [], []
    for position, q in enumerate(released.per_question):
        item = {"question": q.question, "level": q.level, "category": q.category, "importance": q.importance,
                "source_fact": q.source_fact, "position": position}
        if q.answer in ANSWERS and q.score is not None:
            questions.append(QuestionResult(**item, status="answered", answer=q.answer,
                                            rationale=q.rationale or "", score=q.score))
        else:
            questions.append(QuestionResult(**item, status="failed", raw=q.answer))
            failures.append(ParseFailure(position=position, level=q.level, question=q.question,
                                         reason=f"recorded answer {q.answer!r} is not yes, no or unknown"))
    counts = released.answer_counts
    missing = {"yes", "no", "unknown", "total"} - set(counts)
    if missing:
        raise ValueError(f"answer_counts lacks {sorted(missing)}")
    step = released.next_step
    return Verdict(
        id=str(released.index), status=status_of(released.scores.overall_score),
        score=released.scores.overall_score, prompt=released.original_prompt, image=released.image_id,
        level_scores=LevelScores(**released.scores.level_scores),
        counts=AnswerCounts(yes=counts["yes"], no=counts["no"], unknown=counts["unknown"], total=counts["total"],
                            failed=len(failures)),
        decision=released.gating.decision,
        feedback=step.regenerate_prompt if step.decision == "regenerate" else step.edit_instruction,
        gating=Gating(**released.gating.model_dump(exclude={"decision"}), inclusive=True),
        questions=questions, parse_failures=failures, provenance={"source": "released details.jsonl"},
    )


def verdict_to_record(verdict: Verdict) -> dict:
    """A Verdict in the release's details.jsonl layout (the inverse of `record_to_verdict`).

    Scores are rounded to 2 decimals as the release writes them; `per_question` lists the
    evaluated questions in evaluation order (level 1, 2, 3; QA order inside a level), each with
    its `position` in the QA set. A question whose answer failed to parse is written with
    answer and score null (the release had no such entry; it scored it as unknown).
    """
    level_scores = {level: _rounded(getattr(verdict.level_scores, level))
                    for level in verdict.gating.evaluated_levels}
    evaluated = set(verdict.gating.evaluated_levels)
    asked = sorted((q for q in verdict.questions if q.level in evaluated and q.status != "skipped"),
                   key=lambda q: (LEVELS.index(q.level), q.position))
    counts = verdict.counts
    feedback = verdict.feedback if verdict.decision in ("regenerate", "edit") else None
    return {
        "index": verdict.id, "image_id": verdict.image, "original_prompt": verdict.prompt,
        "gating": {"evaluated_levels": list(verdict.gating.evaluated_levels),
                   "skipped_levels": list(verdict.gating.skipped_levels),
                   "level_1_score": _rounded(verdict.gating.level_1_score), "decision": verdict.decision,
                   "regenerate_threshold": verdict.gating.regenerate_threshold,
                   "keep_threshold": verdict.gating.keep_threshold},
        "scores": {"overall_score": _rounded(verdict.score), "level_scores": level_scores},
        "answer_counts": {"yes": counts.yes, "no": counts.no, "unknown": counts.unknown, "total": counts.total},
        "per_question": [{"position": q.position, "level": q.level, "category": q.category,
                          "importance": q.importance, "question": q.question, "answer": q.answer,
                          "rationale": q.rationale, "source_fact": q.source_fact, "score": q.score}
                         for q in asked],
        "next_step": {"decision": verdict.decision,
                      "regenerate_prompt": feedback if verdict.decision == "regenerate" else None,
                      "edit_instruction": feedback if verdict.decision == "edit" else None},
    }


def _rounded(score: float | None) -> float | None:
    return None if score is None else round(score, 2)


def rescore(verdict: Verdict, policy: GatingPolicy = DEFAULT_POLICY) -> Verdict:
    """Recompute scores and decision from a verdict's per-question answers under `policy`.

    Feedback text is kept only when the decision is unchanged (an edit instruction is no
    regeneration constraint). Questions the verdict never asked count as missing answers
    if the new policy evaluates them.
    """
    items, answers = [], {}
    for position, question in enumerate(verdict.questions):
        items.append(question.item())
        if question.status == "answered":
            answers[position] = QuestionAnswer(answer=question.answer, rationale=question.rationale)
        elif question.status == "failed":
            answers[position] = question.raw
    result = score_answers(items, answers, policy, prompt=verdict.prompt, index=verdict.id,
                           image=verdict.image, feedback=verdict.feedback,
                           provenance={**verdict.provenance, "rescored": "fager.scoring"})
    if result.decision != verdict.decision:
        result = result.model_copy(update={"feedback": None})
    return result


def rescore_details(path: str | os.PathLike, policy: GatingPolicy = DEFAULT_POLICY) -> list[Verdict]:
    """Read a details.jsonl and re-score every record."""
    return [rescore(v, policy) for v in read_details(path)]


def verdict_key(verdict: Verdict) -> str:
    """The key that pairs verdicts across runs: the dataset index, else the image name."""
    key = verdict.id if verdict.id is not None else verdict.image
    if key is None:
        raise ValueError("verdict has neither an index nor an image to pair it by")
    return key


# ---- summary.csv ---------------------------------------------------------------------------

def _cell(score: float | None) -> str:
    return "" if score is None else repr(round(score, 2))


def summary_row(verdict: Verdict) -> list[str]:
    """One summary.csv row: scores rounded to 2 decimals, empty for a level without a score."""
    counts = verdict.counts
    return [
        verdict.image or "", verdict.id or "", verdict.decision or "",
        *(_cell(getattr(verdict.level_scores, level)) for level in LEVELS),
        _cell(verdict.score),
        str(counts.total), str(counts.yes), str(counts.no), str(counts.unknown),
        (verdict.feedback or "") if verdict.decision == "regenerate" else "",
        (verdict.feedback or "") if verdict.decision == "edit" else "",
        str(counts.failed),
    ]


def format_summary(verdicts: Iterable[Verdict]) -> str:
    """summary.csv text: the released columns plus n_failed, LF line ends."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SUMMARY_COLUMNS)
    writer.writerows(summary_row(v) for v in verdicts)
    return out.getvalue()


def write_summary(verdicts: Iterable[Verdict], path: str | os.PathLike) -> None:
    """Write verdicts as summary.csv."""
    Path(path).write_text(format_summary(verdicts), encoding="utf-8", newline="")


def read_summary(path: str | os.PathLike) -> list[dict[str, str]]:
    """Rows of a summary.csv (released layout, with or without n_failed) as column -> cell."""
    with open(path, newline="", encoding="utf-8") as handle:
        try:
            lines = list(csv.reader(handle))
        except csv.Error as error:
            raise ReplayFormatError(f"{path}: not readable as CSV ({error})") from None
        reader = iter(lines)
        header = next(reader, None)
        if header is None or tuple(header[:len(RELEASED_SUMMARY_COLUMNS)]) != RELEASED_SUMMARY_COLUMNS:
            raise ReplayFormatError(f"{path}: header must start with {','.join(RELEASED_SUMMARY_COLUMNS)}; "
                                    f"got {header}")
        rows = []
        for line_no, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise ReplayFormatError(f"{path}:{line_no}: expected {len(header)} fields, got {len(row)}")
            rows.append(dict(zip(header, row)))
        return rows


def summary_scores(path: str | os.PathLike) -> dict[str, float | None]:
    """Overall score per index from a summary.csv (None where the cell is empty)."""
    scores: dict[str, float | None] = {}
    for line_no, row in enumerate(read_summary(path), start=2):
        key = row["index"] or row["image_file"]
        if key in scores:
            raise ReplayFormatError(f"{path}:{line_no}: duplicate index {key!r}")
        try:
            scores[key] = float(row["overall_score"]) if row["overall_score"] else None
        except ValueError:
            raise ReplayFormatError(f"{path}:{line_no}: overall_score {row['overall_score']!r} is not a number") \
                from None
    return scores


def details_scores(path: str | os.PathLike, policy: GatingPolicy = DEFAULT_POLICY) -> dict[str, float | None]:
    """Overall score per index, re-scored exactly from a details.jsonl."""
    scores: dict[str, float | None] = {}
    for verdict in rescore_details(path, policy):
        key = verdict_key(verdict)
        if key in scores:
            raise ReplayFormatError(f"{path}: duplicate index {key!r}")
        scores[key] = verdict.score
    return scores



def run_scores(path: Path, policy: GatingPolicy) -> dict[str, float | None]:
    """Overall score per index of a summary CSV (as written) or a details JSONL (re-scored)."""
    if path.suffix.lower() == ".csv":
        return summary_scores(path)
    if path.suffix.lower() in (".jsonl", ".json"):
        return details_scores(path, policy)
    raise ValueError(f"{path}: expected a summary .csv or a details .jsonl")


def ab_scores(factual: Path, generated: Path, policy: GatingPolicy) -> tuple[dict[str, float], dict[str, float]]:
    """The overall scores of two saved runs for the Factual A/B test, by index; an item without a
    score raises ValueError (the test needs both). Scores are compared at the two decimals a
    summary.csv holds when either side is one, so a re-scored run pairs with a written one."""
    first, second = run_scores(factual, policy), run_scores(generated, policy)
    unscored = sorted(k for side in (first, second) for k, v in side.items() if v is None)
    if unscored:
        raise ValueError(f"no overall score for index {', '.join(unscored[:10])}")
    if ".csv" in (factual.suffix.lower(), generated.suffix.lower()):
        first = {k: round(v, 2) for k, v in first.items()}
        second = {k: round(v, 2) for k, v in second.items()}
    return first, second


# -- the files of a run: the items CSV in, the records and their summary out ----------------------
def read_table(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of a CSV that must have `columns` (others are ignored), with clear errors."""
    from vlmjudge.cli.preflight import require_file  # a command's input check, loaded with the command

    require_file(path, f"a CSV file with the columns {', '.join(columns)}"
                       + (" (image: a path relative to the CSV's folder)" if "image" in columns else ""))
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}; has {reader.fieldnames}")
        rows = list(reader)
    if not rows:
        raise ValueError(f"{path}: no rows")
    for line_no, row in enumerate(rows, start=2):
        empty = [c for c in columns if not (row.get(c) or "").strip()]
        if empty:
            raise ValueError(f"{path}:{line_no}: empty {empty}")
    ids = [row["index"] for row in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: index values repeat")
    return rows


def read_items(path: Path, require_files: bool = True) -> tuple[list[str], list[str], list[Path]]:
    """The ids, prompts and image paths (relative to the CSV's folder) of an items CSV; a missing
    image file raises FileNotFoundError unless `require_files` is False (the caller screens it)."""
    rows = read_table(path, ("index", "prompt", "image"))
    images = [(path.parent / row["image"]) for row in rows]
    absent = [str(p) for p in images if not p.is_file()]
    if absent and require_files:
        raise FileNotFoundError(f"{path}: image file(s) not found: {absent[:5]}")
    return [row["index"] for row in rows], [row["prompt"] for row in rows], images


def summary_path(details: Path) -> Path:
    """summary.csv beside the records: summary.csv for details.jsonl (the released layout), else <stem>.summary.csv."""
    return details.with_name("summary.csv" if details.name == "details.jsonl" else f"{details.stem}.summary.csv")


__all__ = [
    "RELEASED_SUMMARY_COLUMNS", "SUMMARY_COLUMNS", "ReplayFormatError", "details_scores", "format_summary",
    "read_details", "read_summary", "record_to_verdict", "rescore", "rescore_details", "summary_row",
    "summary_scores", "verdict_key", "verdict_to_record", "write_summary", "write_verdicts", "run_scores",
    "ab_scores", "read_table", "read_items", "summary_path",
]
