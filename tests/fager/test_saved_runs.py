"""Replay of the released ABO runs: re-scoring the per-question answers reproduces summary.csv."""
from __future__ import annotations

import json

import pytest

from fager.saved_runs import (
    RELEASED_SUMMARY_COLUMNS, SUMMARY_COLUMNS, ReplayFormatError, format_summary, read_details, read_summary,
    record_to_verdict, rescore, rescore_details, summary_row, write_summary,
)
from fager.scoring import GatingPolicy

RUNS = ["real", "flux2"]


def _first_record(abo, run="real") -> dict:
    return json.loads((abo / "results" / run / "details.jsonl").read_text("utf-8").splitlines()[0])


@pytest.mark.parametrize("run", RUNS)
def test_rescoring_reproduces_released_summary(abo, run):
    folder = abo / "results" / run
    released = {row["index"]: row for row in read_summary(folder / "summary.csv")}
    verdicts = rescore_details(folder / "details.jsonl")
    assert len(verdicts) == len(released) == 50
    for verdict in verdicts:
        row = dict(zip(SUMMARY_COLUMNS, summary_row(verdict)))
        expected = released[verdict.id]
        for column in RELEASED_SUMMARY_COLUMNS:  # scores, decisions, counts, feedback and names
            assert row[column] == expected[column], (run, verdict.id, column)
        assert row["n_failed"] == "0"
        assert verdict.parse_failures == []


def test_released_cells_cover_the_interesting_cases(abo):
    """The comparison above is only as strong as the data: it has keeps at exactly 95,
    empty level cells, unknowns and both decisions."""
    rows = read_summary(abo / "results" / "real" / "summary.csv")
    assert any(r["overall_score"] == "95.0" and r["decision"] == "keep" for r in rows)
    assert any(r["level_3_score"] == "" for r in rows) and any(r["level_2_score"] == "" for r in rows)
    assert {r["decision"] for r in rows} == {"keep", "edit"}
    assert sum(int(r["n_unknown"]) for r in rows) == 25


def test_recorded_verdict_holds_the_record(abo):
    verdict = read_details(abo / "results" / "real" / "details.jsonl")[0]
    assert (verdict.id, verdict.image, verdict.decision) == ("1", "01_e429aab6.jpg", "edit")
    assert verdict.prompt == "Amazon Elements Melatonin 3mg, 260 Tablets"
    assert verdict.level_scores.model_dump() == {"level_1": 100.0, "level_2": 75.0, "level_3": 100.0}
    assert verdict.score == 87.5
    assert verdict.feedback.startswith("Replace the visible brand name")
    assert len(verdict.questions) == 8 and verdict.questions[2].answer == "no"
    assert verdict.gating.regenerate_threshold == 20.0 and verdict.gating.keep_threshold == 95.0


def test_other_thresholds_change_decisions_and_drop_stale_feedback(abo):
    verdicts = read_details(abo / "results" / "real" / "details.jsonl")
    lenient = [rescore(v, GatingPolicy(keep_threshold=90.0)) for v in verdicts]
    changed = [(old, new) for old, new in zip(verdicts, lenient) if old.decision != new.decision]
    assert changed and all(old.decision == "edit" and new.decision == "keep" for old, new in changed)
    assert all(new.score >= 90.0 and new.feedback is None for _, new in changed)
    harsh = [rescore(v, GatingPolicy(regenerate_threshold=90.0)) for v in verdicts]
    regenerated = [v for v in harsh if v.decision == "regenerate"]
    assert regenerated
    for verdict in regenerated:
        assert verdict.score == verdict.level_scores.level_1 <= 90.0
        assert verdict.level_scores.level_2 is None and verdict.level_scores.level_3 is None
        assert verdict.feedback is None  # an edit instruction is not a regeneration constraint


def test_unreadable_recorded_answer_is_a_parse_failure(abo):
    record = _first_record(abo)
    record["per_question"][2]["answer"] = "partially"
    verdict = record_to_verdict(record)
    assert verdict.counts.failed == 1 and verdict.parse_failures[0].position == 2
    again = rescore(verdict)
    assert again.counts.failed == 1
    assert "unparseable" in again.parse_failures[0].reason
    assert again.level_scores.level_2 == 100.0  # 3 readable level-2 answers, all yes
    assert again.score == 100.0


def test_dropped_question_is_a_parse_failure(abo):
    """A verdict whose answer list misses a question reports it as a failure on re-scoring."""
    verdict = record_to_verdict(_first_record(abo))
    questions = [q.model_copy(update={"status": "failed", "answer": None, "score": None, "rationale": ""})
                 if q.position == 7 else q for q in verdict.questions]
    again = rescore(verdict.model_copy(update={"questions": questions}))
    assert [(f.position, f.reason) for f in again.parse_failures] == [(7, "missing answer")]
    assert again.counts.total == 7 and again.level_scores.level_3 == 100.0


def test_malformed_details_name_the_line(abo, tmp_path):
    good = json.dumps(_first_record(abo))
    path = tmp_path / "details.jsonl"
    path.write_text(good + "\n\n" + "{not json\n", encoding="utf-8")
    with pytest.raises(ReplayFormatError, match=":3:"):
        read_details(path)
    broken = _first_record(abo)
    del broken["per_question"]
    path.write_text(json.dumps(broken) + "\n", encoding="utf-8")
    with pytest.raises(ReplayFormatError, match="(?s):1:.*per_question"):
        read_details(path)
    mismatch = _first_record(abo)
    mismatch["next_step"]["decision"] = "keep"
    with pytest.raises(ValueError, match="differs from next step"):
        record_to_verdict(mismatch)


def test_summary_round_trip(abo, tmp_path):
    verdicts = rescore_details(abo / "results" / "flux2" / "details.jsonl")
    out = tmp_path / "summary.csv"
    write_summary(verdicts, out)
    rows = read_summary(out)
    assert list(rows[0]) == list(SUMMARY_COLUMNS)
    assert [r["index"] for r in rows] == [v.id for v in verdicts]
    assert out.read_text("utf-8") == format_summary(verdicts)
    bad = tmp_path / "bad.csv"
    bad.write_text("image_file,score\nx,1\n", encoding="utf-8")
    with pytest.raises(ReplayFormatError, match="header"):
        read_summary(bad)


def test_verdict_lines_round_trip_and_replay(abo, tmp_path):
    """The project's own verdict lines read back unchanged and re-score to the same result."""
    from fager.saved_runs import write_verdicts
    verdicts = rescore_details(abo / "results" / "real" / "details.jsonl")
    path = tmp_path / "verdicts.jsonl"
    write_verdicts(verdicts, path)
    again = read_details(path)
    assert again == verdicts
    assert [rescore(v) for v in again] == verdicts


@pytest.mark.parametrize("run", RUNS)
def test_released_layout_is_written_back(abo, run):
    """`verdict_to_record` of a re-scored released record gives that record's gating, scores and
    counts, and per_question in evaluation order; reading it back gives the same verdict scores."""
    from fager.saved_runs import verdict_to_record
    lines = (abo / "results" / run / "details.jsonl").read_text("utf-8").splitlines()
    for line in lines:
        released = json.loads(line)
        record = verdict_to_record(rescore(record_to_verdict(released)))
        for key in ("gating", "scores", "answer_counts"):
            assert record[key] == released[key], (run, released["index"], key)
        assert [(q["level"], q["answer"]) for q in record["per_question"]] == \
            [(q["level"], q["answer"]) for q in released["per_question"]
             if q["level"] in released["gating"]["evaluated_levels"]]
        again = record_to_verdict(record)
        assert (again.score, again.decision) == (released["scores"]["overall_score"],
                                                          released["gating"]["decision"])
