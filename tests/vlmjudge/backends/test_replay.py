import json

import pytest
from PIL import Image

from vlmjudge import JudgeError, Request, load_judge
from vlmjudge.backends.replay import record_answers


def req(i, question="q1"):
    return Request(images=[Image.new("RGB", (4, 4), (i, 0, 0))], text=f"{question}?",
                   meta={"item_id": f"img{i}", "question_id": question})


def test_generate_by_meta_key_and_call_counts():
    answers = {("img0", "q1"): "Yes, it is.", ("img1", "q1"): {"text": "No", "finish_reason": "length"}}
    judge = load_judge(answers, backend="replay", key_fields=("item_id", "question_id"), batch_size=1)
    out = judge.generate([req(0), req(1)])
    assert [a.text for a in out] == ["Yes, it is.", "No"]
    assert out[1].finish_reason == "length"
    assert judge.stats.model_calls == 2 and judge.stats.forward_batches == 2 and judge.stats.images_encoded == 2


def test_by_hash_and_missing_answer_is_an_error():
    r = req(3)
    judge = load_judge({r.content_hash(): "Yes"}, backend="replay")
    assert judge.generate([r])[0].text == "Yes"
    with pytest.raises(JudgeError, match="no recorded answer"):
        judge.generate([req(4)])


def test_choice_probs_from_distribution_and_from_text():
    answers = {("img0", "q1"): {"probs": {"Yes": 0.6, "No": 0.2, "Maybe": 0.2}},
               ("img1", "q1"): "No, nothing is floating."}
    judge = load_judge(answers, backend="replay", key_fields=("item_id", "question_id"))
    p0, p1 = judge.choice_probs([req(0), req(1)], ["Yes", "No"])
    assert p0 == pytest.approx({"Yes": 0.75, "No": 0.25})
    assert p1 == {"Yes": 0.0, "No": 1.0}


def test_choice_probs_text_matching_no_option_raises():
    judge = load_judge({"img0": "Perhaps"}, backend="replay", key_fields=("item_id",))
    with pytest.raises(JudgeError, match="none of"):
        judge.choice_probs([req(0)], ["Yes", "No"])


def test_failed_response_and_scripted_retries():
    judge = load_judge({"img0": [None, "Yes"]}, backend="replay", key_fields=("item_id",))
    first, second = judge.generate([req(0)]), judge.generate([req(0)])
    assert first[0].finish_reason == "error" and first[0].text == ""
    assert second[0].text == "Yes"
    assert judge.choice_probs([req(0)], ["Yes", "No"]) == [{"Yes": 1.0, "No": 0.0}]


def test_options_must_be_distinct():
    judge = load_judge({"img0": "Yes"}, backend="replay", key_fields=("item_id",))
    with pytest.raises(ValueError):
        judge.choice_probs([req(0)], ["Yes", "Yes"])
    with pytest.raises(TypeError):
        judge.generate(["not a request"])


def test_jsonl_round_trip(tmp_path):
    requests = [req(i) for i in range(3)]
    texts = load_judge({f"img{i}": f"answer {i}" for i in range(3)}, backend="replay",
                       key_fields=("item_id",)).generate(requests)
    by_hash, by_meta = tmp_path / "hash.jsonl", tmp_path / "meta.jsonl"
    record_answers(requests, texts, by_hash)
    record_answers(requests, texts, by_meta, key_fields=("item_id", "question_id"))
    assert [a.text for a in load_judge(str(by_hash), backend="replay").generate(requests)] == \
        ["answer 0", "answer 1", "answer 2"]
    meta_judge = load_judge(str(by_meta), backend="replay", key_fields=("item_id", "question_id"))
    assert meta_judge.generate(requests[2:])[0].text == "answer 2"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"hash": "x"}) + "\n{oops\n")
    with pytest.raises(ValueError, match="bad.jsonl"):
        load_judge(str(bad), backend="replay")


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend"):
        load_judge("x", backend="nope")
