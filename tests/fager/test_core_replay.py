"""The pipeline against the released ABO run, replayed by item and question id on synthetic images."""
from __future__ import annotations

import json

import pytest

from fager import ab_test, read_qa_csv, read_summary
from fager.core import Fager, QABuildError
from fager.qa_store import QAStore
from fager.saved_runs import RELEASED_SUMMARY_COLUMNS, summary_row
from fager.schema import CategoryFacts, LevelRubric, QAItem, QASet, Rubric
from fager.scoring import GatingPolicy

from fagent_helpers import keyed_replay, noise, released, released_answers


def score_side(abo, side, chunk_size=512, judge=None):
    records = released(abo, side)
    judge = judge or keyed_replay(released_answers(records))
    fager = Fager(judge, chunk_size=chunk_size)
    images = [noise(i, (16, 16)) for i in range(len(records))]
    verdicts = fager.score(images, [r["original_prompt"] for r in records], qa_sets=read_qa_csv(abo / "QA.csv"),
                           ids=[str(r["index"]) for r in records])
    return records, judge, verdicts


@pytest.mark.parametrize("side", ["real", "flux2"])
def test_score_reproduces_the_released_summary(abo_dir, side):
    _, _, verdicts = score_side(abo_dir, side, chunk_size=7)
    rows = read_summary(abo_dir / "results" / side / "summary.csv")
    assert len(verdicts) == len(rows) == 50
    for verdict, row in zip(verdicts, rows):
        ours = dict(zip(RELEASED_SUMMARY_COLUMNS, summary_row(verdict)))
        for column in RELEASED_SUMMARY_COLUMNS[1:]:  # image_file: the images are synthetic
            assert ours[column] == row[column], (row["index"], column)
        assert verdict.counts.failed == 0


def test_chunking_and_order_lose_nothing(abo_dir):
    records, judge, verdicts = score_side(abo_dir, "real", chunk_size=5)
    _, _, whole = score_side(abo_dir, "real", chunk_size=10_000)
    assert [v.model_dump() for v in verdicts] == [v.model_dump() for v in whole]
    asked = [(r.meta["item_id"], r.meta["question_id"]) for op, r in judge.log]
    questions = [k for k in asked if k[1] != "feedback"]
    expected = {(str(r["index"]), p) for r in records for p in range(len(r["per_question"]))}
    assert len(questions) == len(set(questions)) and set(questions) == expected  # each asked once
    # level 1 of every image before any level 2-3 question; within a stage, image by image
    qa = {q.index: q for q in read_qa_csv(abo_dir / "QA.csv")}
    levels = [qa[i].items[p].level for i, p in questions]
    first_deep = levels.index("level_2") if "level_2" in levels else len(levels)
    assert set(levels[:first_deep]) == {"level_1"} and "level_1" not in levels[first_deep:]
    for stage in (questions[:first_deep], questions[first_deep:]):
        items = [i for i, _ in stage]
        assert items == sorted(items, key=items.index)  # contiguous per image
    feedback = [k[0] for k in asked if k[1] == "feedback"]
    assert asked[-len(feedback):] == [(i, "feedback") for i in feedback]  # feedback last, only where needed
    assert sorted(feedback, key=int) == sorted((str(r["index"]) for r in records
                                                if r["next_step"]["decision"] != "keep"), key=int)


def test_ab_test_on_pipeline_scores_gives_the_paper_number(abo_dir):
    scores = {}
    for side in ("real", "flux2"):
        _, _, verdicts = score_side(abo_dir, side)
        scores[side] = {v.id: v.score for v in verdicts}
    assert (ab_test(scores["real"], scores["flux2"], tie="full").correct, ab_test(scores["real"], scores["flux2"]).pairs) == (41, 50)
    assert ab_test(scores["real"], scores["flux2"], tie="zero").correct == 23
    skip = ab_test(scores["real"], scores["flux2"], tie="skip")
    assert (skip.correct, skip.correct + skip.wrong, skip.ties) == (23, 32, 18)


def small_qa():
    items = [QAItem(question=q, level=lv, category="existence", importance="high", source_fact=f"fact {q}")
             for q, lv in (("L1 a?", "level_1"), ("L1 b?", "level_1"), ("L2 a?", "level_2"), ("L3 a?", "level_3"))]
    return QASet(prompt="a red apple", index="7", items=items)


def answer(a, why="seen"):
    return json.dumps({"answer": a, "rationale": why})


def test_gate_skips_levels_2_3_and_asks_for_a_regeneration_constraint():
    judge = keyed_replay({("7", 0): answer("no"), ("7", 1): answer("unknown"), ("7", 2): answer("yes"),
                          ("7", 3): answer("yes"), ("7", "feedback"): json.dumps({"instruction": "show it"})})
    verdict = Fager(judge).score([noise(1)], ["a red apple"], qa_sets=[small_qa()], ids=["7"])[0]
    # level 1: (0 + 0.5) / 2 = 25 > 20, so levels 2-3 are asked; overall (0 + .5 + 1 + 1) / 4 = 62.5
    assert verdict.level_scores.level_1 == 25.0 and verdict.score == 62.5
    assert [r.meta["question_id"] for _, r in judge.log] == [0, 1, 2, 3, "feedback"]
    judge = keyed_replay({("7", 0): answer("no"), ("7", 1): answer("no"),
                          ("7", "feedback"): json.dumps({"constraint": "a whole red apple on a table"})})
    verdict = Fager(judge).score([noise(1)], ["a red apple"], qa_sets=[small_qa()], ids=["7"])[0]
    assert verdict.decision == "regenerate" and verdict.score == 0.0
    assert verdict.gating.skipped_levels == ["level_2", "level_3"]
    assert verdict.feedback == "a whole red apple on a table"
    asked = [r.meta["question_id"] for _, r in judge.log]
    assert asked == [0, 1, "feedback"]
    feedback_request = judge.log[-1][1]
    assert "L1 a?" in feedback_request.text and "L2 a?" not in feedback_request.text


def test_keep_asks_no_feedback_and_edit_does():
    answers = {("7", p): answer("yes") for p in range(4)}
    judge = keyed_replay(answers)
    verdict = Fager(judge).score([noise(2)], ["a red apple"], qa_sets=[small_qa()], ids=["7"])[0]
    assert (verdict.decision, verdict.score, verdict.feedback) == ("keep", 100.0, None)
    assert all(r.meta["question_id"] != "feedback" for _, r in judge.log)
    answers[("7", 3)] = answer("no", "the stem is missing")
    answers[("7", "feedback")] = json.dumps({"instruction": "add a brown stem"})
    judge = keyed_replay(answers)
    verdict = Fager(judge).score([noise(2)], ["a red apple"], qa_sets=[small_qa()], ids=["7"])[0]
    assert (verdict.decision, verdict.score, verdict.feedback) == ("edit", 75.0, "add a brown stem")
    edit_text = judge.log[-1][1].text
    assert "L3 a?" in edit_text and "the stem is missing" in edit_text and "L1 a?" not in edit_text


def test_unreadable_answers_and_feedback_are_counted_not_scored():
    judge = keyed_replay({("7", 0): answer("yes"), ("7", 1): "I cannot tell", ("7", 2): None,
                          ("7", 3): answer("no"), ("7", "feedback"): "no json here"})
    verdict = Fager(judge).score([noise(3)], ["a red apple"], qa_sets=[small_qa()], ids=["7"])[0]
    assert verdict.counts.failed == 2 and verdict.counts.total == 2
    assert verdict.score == 50.0 and verdict.decision == "edit"
    assert verdict.feedback is None and "no JSON object" in verdict.provenance["feedback_error"]
    assert {f.position for f in verdict.parse_failures} == {1, 2}


def test_policy_is_configurable():
    answers = {("7", 0): answer("yes"), ("7", 1): answer("no"), ("7", 2): answer("no"), ("7", 3): answer("no")}
    verdict = Fager(keyed_replay(answers), policy=GatingPolicy(regenerate_threshold=50.0),
                    feedback=False).score([noise(4)], ["a red apple"], qa_sets=[small_qa()], ids=["7"])[0]
    assert verdict.decision == "regenerate" and verdict.level_scores.level_1 == 50.0


def rubric_with(facts):
    level = LevelRubric.empty().model_copy(update={"existence": CategoryFacts(importance="high", facts=facts)})
    return Rubric(level_1=level, level_2=LevelRubric.empty(), level_3=LevelRubric.empty())


def agent_answers(item, proposal, verified, questions, extraction=None, dropped=()):
    answers = {(item, "proposal"): proposal.model_dump_json(),
               (item, "verification"): json.dumps({"verified_rubric": verified.model_dump(), "added": [],
                                                   "dropped": list(dropped)}),
               (item, "qa"): json.dumps({"questions": questions})}
    if extraction is not None:
        answers[(item, "extraction:0")] = json.dumps(extraction)
    return answers


def test_build_qa_runs_the_agents_stores_and_reuses(tmp_path):
    proposal = rubric_with(["An apple is shown", "The apple is red"])
    verified = rubric_with(["An apple is shown"])
    extraction = {"status": "ok", "summary": "A red apple.", "visual_elements": ["red skin"], "confidence": 0.9,
                  "notes": ""}
    dropped = [{"level": "level_1", "category": "existence", "fact": "The apple is red",
                "reason": "not_necessary", "rationale": "colour varies"}]
    text = keyed_replay(agent_answers("7", proposal, verified, ["Is the main object an apple?"], dropped=dropped))
    image = keyed_replay({("7", "extraction:0"): json.dumps(extraction)})
    refs = {"7": [noise(9)]}
    fager = Fager(image, text, store=tmp_path / "store", references=refs)
    qa = fager.build_qa(["a red apple"], ids=["7"])[0]
    assert [i.question for i in qa.items] == ["Is the main object an apple?"]
    assert qa.items[0].source_fact == "An apple is shown" and qa.index == "7"
    assert [r.meta["stage"] for _, r in text.log] == ["proposal", "verification", "qa"]
    assert [r.meta["stage"] for _, r in image.log] == ["extraction"] and len(image.log[0][1].images) == 1
    verification_text = text.log[1][1].text
    assert "red skin" in verification_text and "The apple is red" in verification_text
    assert all(r.images == [] for _, r in text.log)  # text agents see no image
    record = QAStore(tmp_path / "store").get(fager.key_for("a red apple", [noise(9)]))
    assert record.verification.dropped[0].reason == "not_necessary" and record.references[0].summary == "A red apple."
    assert record.proposal == proposal and record.rubric == verified
    # reused: a fresh pipeline on the same store asks nothing
    again = Fager(keyed_replay({}), keyed_replay({}), store=tmp_path / "store", references=refs)
    assert again.build_qa(["a red apple"], ids=["7"]) == [qa]
    # other references, or another pack, are another QA set
    with pytest.raises(Exception, match="no recorded answer"):
        Fager(keyed_replay({}), keyed_replay({}), store=tmp_path / "store").build_qa(["a red apple"], ids=["7"])
    other_pack = Fager(keyed_replay({}), store=tmp_path / "store", references=refs,
                       pack={"agents": {"qa": {"system": "Be brief."}}})
    assert other_pack.key_for("a red apple", [noise(9)]) != fager.key_for("a red apple", [noise(9)])


def test_build_failures_are_reported_per_prompt():
    good = rubric_with(["An apple is shown"])
    answers = {**agent_answers("1", good, good, ["Is there an apple?"]),
               ("2", "proposal"): '{"level_1": {}}'}
    judge = keyed_replay(answers)
    builds = Fager(judge).build(["an apple", "a pear"], ids=["1", "2"])
    assert builds[0].qa is not None and builds[1].qa is None
    assert builds[1].errors and builds[1].errors[0].startswith("proposal: Rubric invalid")
    with pytest.raises(QABuildError, match="a pear"):
        Fager(keyed_replay(answers)).build_qa(["an apple", "a pear"], ids=["1", "2"])
    # score() without QA sets builds them; the unbuildable one gets no score, with the reason
    verdicts = Fager(keyed_replay({**answers, ("1", 0): answer("yes")})).score(
        [noise(1), noise(2)], ["an apple", "a pear"], ids=["1", "2"])
    assert verdicts[0].score == 100.0 and verdicts[0].provenance["qa_source"] == "built"
    assert verdicts[1].score is None and verdicts[1].decision is None
    assert "proposal" in verdicts[1].provenance["qa_error"]


def test_question_count_mismatch_is_an_error():
    rubric = rubric_with(["An apple is shown", "It is red"])
    judge = keyed_replay(agent_answers("1", rubric, rubric, ["Only one question?"]))
    build = Fager(judge).build(["an apple"], ids=["1"])[0]
    assert build.qa is None and "1 questions for 2 facts" in build.errors[0]


def test_repeated_questions_are_left_out_with_a_note():
    rubric = rubric_with(["An apple is shown", "There is an apple"])
    judge = keyed_replay(agent_answers("1", rubric, rubric, ["Is there an apple?", "Is there an apple?"]))
    build = Fager(judge).build(["an apple"], ids=["1"])[0]
    assert len(build.qa.items) == 1 and "1 repeated" in build.notes[0]


def test_bad_inputs_raise_clear_errors(abo_dir):
    fager = Fager(keyed_replay({}))
    with pytest.raises(ValueError, match="2 images for 1 prompts"):
        fager.score([noise(1), noise(2)], ["x"], qa_sets=[small_qa()])
    with pytest.raises(ValueError, match="no QA set for prompt"):
        fager.score([noise(1)], ["a pear"], qa_sets=[small_qa()])
    with pytest.raises(ValueError, match="non-empty string"):
        fager.score([noise(1)], [""], qa_sets=[small_qa()])
    with pytest.raises(ValueError, match="chunk_size"):
        Fager(keyed_replay({}), chunk_size=0)


DEGENERATE_ANSWERS = ['{"answer":"yes","x":' + "9" * 5000 + "}",   # beyond Python's int digit limit
                      "*" * 32000 + "x",                             # quadratic for a backtracking regex
                      '{"answer": "no", "x": ' + "[" * 5000 + "]" * 5000 + "}"]  # deeper than the stack


def test_degenerate_answers_are_counted_failures_and_a_cached_rerun_agrees(tmp_path):
    """Issue 19: each degenerate answer is a counted parse failure; a rerun served from the
    response cache (0 model calls) neither crashes nor scores it."""
    answers = {("7", 0): DEGENERATE_ANSWERS[0], ("7", 1): DEGENERATE_ANSWERS[1], ("7", 2): answer("yes"),
               ("7", 3): DEGENERATE_ANSWERS[2]}
    for run in ("first", "rerun"):
        judge = keyed_replay(answers, cache=tmp_path / "cache.sqlite")
        verdict = Fager(judge).score([noise(3)], ["a red apple"], qa_sets=[small_qa()], ids=["7"])[0]
        assert {f.position for f in verdict.parse_failures} == {0, 1, 3}, run
        assert (verdict.counts.total, verdict.counts.failed, verdict.score) == (1, 3, 100.0), run
        assert verdict.decision is None and verdict.level_scores.level_1 is None, run  # no level-1 answer
    assert judge.stats.model_calls == 0 and judge.stats.cache_hits == 4
