"""TIFA: the released QA layout is read, the scoring gives TIFA's own numbers on its released
answers, a record's score is the share of its questions marked correct, and questions the judge
writes are held to TIFA's format."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from vlmjudge import load_judge
from vlmjudge.stats.statistic import value_of
from vlmjudge.testing.conformance import check_method

from t2ibaselines.tifa.answering import show
from t2ibaselines.tifa.core import Tifa
from t2ibaselines.tifa.generation import tifa_layout
from t2ibaselines.tifa.pack import load_pack
from t2ibaselines.tifa.questions import ELEMENT_TYPES, TifaQuestion, read_qa_file
from t2ibaselines.tifa.scoring import benchmark_summary
from t2ibaselines.tifa.spec import SPEC
from t2ibaselines.tifa.statistics import STATISTICS, slug

DATA = Path(__file__).resolve().parents[1] / "data" / "tifa"
QA_FILE = DATA / "sample_question_answers.json"
RELEASED = json.loads((DATA / "sample_evaluation_result.json").read_text())
KEYS = ("stage", "item_id", "question")


def letter_of(question: dict, choice: str) -> str:
    """The letter the judge sees `choice` under for this question (choices are shown shuffled)."""
    shown = show(load_pack(), TifaQuestion(**{k: question[k] for k in ("question", "choices", "answer", "element_type")}))
    return shown.letters[shown.choices.index(choice)]


def released_images_and_prompts() -> tuple[list[Image.Image], list[str], list[str]]:
    texts = json.loads((DATA / "sample_text_inputs.json").read_text())
    images = [Image.new("RGB", (48, 48), colour) for colour in ("gray", "green")]
    return images, [t["caption"] for t in texts], [f"{t['id']}.png" for t in texts]


def test_the_released_qa_layout_is_read():
    found = read_qa_file(QA_FILE)
    assert sorted(found) == ["coco_301091", "drawbench_52"]
    caption, questions = found["coco_301091"]
    assert caption == "On a gray day a surfer carrying a white board walks on a beach."
    assert len(questions) == 11 and len(found["drawbench_52"][1]) == 8
    assert questions[1].choices == ("surfer", "swimmer", "diver", "skier") and questions[1].answer == "surfer"
    assert {q.element_type for _, qs in found.values() for q in qs} <= set(ELEMENT_TYPES)


def test_the_scoring_gives_tifas_own_numbers_on_its_released_answers():
    per_prompt = {text_id: [(q["element_type"], q["multiple_choice_vqa"] == q["answer"]) for q in questions.values()]
                  for text_id, questions in RELEASED["question_details"].items()}
    for text_id, questions in RELEASED["question_details"].items():  # the released marks are TIFA's own rule
        assert [int(q["multiple_choice_vqa"] == q["answer"]) for q in questions.values()] == \
            [q["scores"] for q in questions.values()]
    summary = benchmark_summary(per_prompt)
    assert summary["tifa_average"] == RELEASED["tifa_average"] == 0.8125
    assert summary["tifa_stdev"] == pytest.approx(RELEASED["tifa_stdev"])
    assert summary["accuracy_by_type"] == pytest.approx(RELEASED["accuracy_by_type"])
    assert summary["caption_scores"] == RELEASED["caption_scores"]


def test_the_scorer_replaying_the_released_answers_gives_tifas_numbers():
    """Every released multiple-choice answer replayed as the judge's letter, through the real
    judge interface: the records and the method's statistics are TIFA's own numbers."""
    answers = {("tifa", f"{text_id}.png", q["question"]): letter_of(q, q["multiple_choice_vqa"])
               for text_id, questions in RELEASED["question_details"].items() for q in questions.values()}
    judge = load_judge(answers, backend="replay", key_fields=KEYS)
    images, prompts, ids = released_images_and_prompts()
    records = Tifa(judge, qa=QA_FILE, generate=False).score(images, prompts, ids)
    rows = [r.to_json() for r in records]
    for row in rows:
        marks = [q["correct"] for q in row["questions"]]
        assert row["status"] == "scored" and row["source"] == "qa_file"
        assert row["score"] == sum(marks) / len(marks) == RELEASED["caption_scores"][row["id"][:-4]]
        assert [q["answer"] for q in row["questions"]] == \
            [q["multiple_choice_vqa"] for q in RELEASED["question_details"][row["id"][:-4]].values()]
    assert value_of(rows, STATISTICS["tifa_average"]) == RELEASED["tifa_average"]
    for element_type, accuracy in RELEASED["accuracy_by_type"].items():
        assert value_of(rows, STATISTICS[f"accuracy_{slug(element_type)}"]) == pytest.approx(accuracy)


def test_a_record_scores_the_share_of_its_questions_marked_correct_on_a_real_model(tiny_vlm_path):
    judge = load_judge(tiny_vlm_path("qwen3_vl"), device="cpu")
    images, prompts, ids = released_images_and_prompts()
    records = Tifa(judge, qa=QA_FILE, generate=False).score(images, prompts, ids)
    for record in records:
        row = record.to_json()
        marks = [q["correct"] for q in row["questions"]]
        assert all(m in (True, False) for m in marks) and row["n_correct"] == sum(marks)
        assert row["score"] == sum(marks) / len(marks)
        for q in row["questions"]:
            assert sorted(q["shown"]) == sorted(q["choices"]) and q["answer"] in q["choices"]
            assert q["answer"] == max(q["probs"], key=q["probs"].get)
            assert sum(q["probs"].values()) == pytest.approx(1.0)
    assert judge.stats.model_calls == 19  # each of the 19 released questions asked once


def test_the_spec_passes_the_conformance_suite():
    question = {"question": "is there a dog?", "choices": ["yes", "no"], "answer": "yes", "element_type": "animal/human"}
    judge = load_judge({("tifa", "a", "is there a dog?"): letter_of(question, "yes"),
                        ("tifa", "b", "is there a dog?"): letter_of(question, "no")}, backend="replay", key_fields=KEYS)
    batch = {"image": [Image.new("RGB", (32, 32), "red"), Image.new("RGB", (32, 32), "blue")],
             "prompt": ["a dog", "a dog"], "id": ["a", "b"], "questions": [[question], [question]]}
    records = check_method(SPEC, judge, batch, config={"generate": False})
    assert [r.score for r in records] == [1.0, 0.0] and records[0].source == "given"


def written(question: str, answer: str, others: list[str], element_type: str) -> dict:
    """A question as the judge writes it (the schema's form: the answer apart from the other choices)."""
    return {"element": question.split()[-1].rstrip("?"), "element_type": element_type, "question": question,
            "answer": answer, "other_choices": others}


def test_questions_the_judge_writes_are_held_to_tifas_format_and_checked_against_the_prompt():
    dog = written("is there a dog?", "yes", ["no"], "animal")
    colour = written("what color is the dog?", "red", ["blue", "green", "black"], "color")
    repeated = written("how many dogs?", "2", ["2", "3"], "counting")
    park = written("is this a park?", "yes", ["no"], "location")
    as_asked = {q["question"]: tifa_layout(q) for q in (dog, colour, park)}
    answers = {("tifa-generate", "a.png", None): json.dumps({"questions": [dog, colour, repeated, park]})}
    for stage, picks in (("tifa-verify", {"is there a dog?": "yes", "what color is the dog?": "red",
                                          "is this a park?": "no"}),  # the prompt names no park
                         ("tifa", {"is there a dog?": "yes", "what color is the dog?": "blue"})):
        answers.update({(stage, "a.png", q): letter_of(as_asked[q], pick) for q, pick in picks.items()})
    judge = load_judge(answers, backend="replay", key_fields=KEYS)
    [record] = Tifa(judge).score([Image.new("RGB", (32, 32), "red")], ["a red dog"], ["a.png"])
    row = record.to_json()
    assert row["source"] == "generated" and row["generation"]["written"] == 4 and row["generation"]["kept"] == 2
    assert any("choices must be distinct" in d for d in row["generation"]["dropped"])
    assert any("is this a park?" in d for d in row["generation"]["dropped"])
    assert [q["choices"] for q in row["questions"]] == [["yes", "no"], ["red", "blue", "green", "black"]]
    assert [q["element_type"] for q in row["questions"]] == ["animal/human", "color"]  # TIFA's merge
    assert row["score"] == 0.5 and row["accuracy_by_type"] == {"animal/human": 1.0, "color": 0.0}


def test_the_question_schema_holds_a_real_decoder_to_tifas_fields(tiny_vlm_path):
    """On a random tiny model the written questions are nonsense, but every one that survives is
    in TIFA's format, and a prompt left without questions fails with the reason."""
    judge = load_judge(tiny_vlm_path("qwen3_vl"), device="cpu")
    pack = {"generate": {"max_questions": 2, "max_chars": 16, "max_new_tokens": 256}}
    [record] = Tifa(judge, pack=pack).score([Image.new("RGB", (32, 32), "red")], ["a red dog"], ["a.png"])
    row = record.to_json()
    generation = row["generation"]
    assert generation["kept"] == len(row["questions"]) <= generation["written"] <= 2
    assert generation["kept"] == generation["written"] or generation["dropped"]  # each drop says why
    for q in row["questions"]:
        assert q["expected"] in q["choices"] and q["element_type"] in ELEMENT_TYPES
    if not row["questions"]:
        assert row["status"] == "failed" and "no usable questions" in " ".join(row["errors"])


def test_what_cannot_be_scored_fails_with_its_reason():
    question = {"question": "is there a dog?", "choices": ["yes", "no"], "answer": "yes", "element_type": "object"}
    judge = load_judge({("tifa", "c.png", "is there a dog?"): None}, backend="replay", key_fields=KEYS)
    qa = {"dog_1": ("a dog", [question])}
    tifa = Tifa(judge, qa=qa, generate=False)
    images = [Image.new("RGB", (32, 32), c) for c in ("red", "blue", "green")]
    missing, renamed, unanswered = tifa.score(images, ["a cat", "a cat", "a dog"], ["a.png", "dog_1.png", "c.png"])
    assert missing.status == "failed" and "question writing is off" in missing.errors[0]
    assert renamed.status == "failed" and "'dog_1' is 'a dog', not this image's prompt 'a cat'" in renamed.errors[0]
    assert unanswered.status == "failed" and unanswered.score is None
    assert unanswered.to_json()["questions"][0]["error"] == "the judge gave no answer (a failed request)"
    wide = {**question, "choices": ["yes", "no", "maybe"]}
    [record] = Tifa(judge, pack={"letters": "AB", "generate": {"max_choices": 2}}).score(images[:1], ["a dog"], questions=[[wide]])
    assert record.status == "failed" and "more choices than the pack's letters (AB)" in record.errors[0]
    with pytest.raises(ValueError, match="1 question\\(s\\) of the QA file have more choices"):
        Tifa(judge, pack={"letters": "AB", "generate": {"max_choices": 2}}, qa={"dog_1": ("a dog", [wide])})


@pytest.mark.parametrize("content, message", [
    ('{"coco_1": []}', "expected a JSON list"),
    ("[]", "holds no questions"),
    ('[{"id": "a", "caption": "a dog", "question": "q?", "choices": ["yes", "no"], "answer": "maybe", '
     '"element_type": "object", "element": "dog"}]', "not one of the choices"),
    ('[{"id": "a", "caption": "a dog", "question": "q?", "choices": ["yes", "no"], "answer": "yes"}]',
     "missing ['element_type', 'element']"),
    ('[{"id": "a", "caption": "a dog", "question": "q?", "choices": ["yes", NaN], "answer": "yes", '
     '"element_type": "object", "element": "dog"}]', "NaN is not a number"),
    ("index,prompt,level,question\n0,a dog,1,is there a dog?\n", "not valid JSON"),
])
def test_a_bad_qa_file_is_one_clear_error(tmp_path, content, message):
    path = tmp_path / "qa.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_qa_file(path)
    with pytest.raises(ValueError, match="is a folder"):
        read_qa_file(tmp_path)
