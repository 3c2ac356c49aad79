"""VQAScore: the number is the full-vocabulary P("Yes") a plain transformers forward gives, on
every path (the command line, the Python scorer, FAGER's A/B baseline), and only that number."""
from __future__ import annotations

import json
import math

import pytest
import torch
from PIL import Image

from baseline_helpers import PROMPTS, read_records, run_vlmjudge, write_images, write_prompts
from vlmjudge import load_judge
from vlmjudge.judge import Judge
from vlmjudge.options import OptionProbs
from vlmjudge.requests import Answer
from vlmjudge.testing.conformance import check_method

from t2ibaselines.vqascore.core import VQAScore
from t2ibaselines.vqascore.pack import load_pack
from t2ibaselines.vqascore.spec import SPEC

QUESTION = 'Does this figure show "{prompt}"? Please answer yes or no.'


def direct_p_yes(model_dir: str, image: Image.Image, prompt: str) -> float:
    """P("Yes") at the first answer position, straight from transformers: the checkpoint's chat
    template, the image then the question as the only user text, one forward, softmax over the vocabulary."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir).eval()
    messages = [{"role": "user", "content": [{"type": "image"},
                                             {"type": "text", "text": QUESTION.replace("{prompt}", prompt)}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text.endswith("assistant\n") and "system" not in text
    inputs = processor(text=[text], images=[image], return_tensors="pt")
    [yes] = processor.tokenizer.encode("Yes", add_special_tokens=False)  # one token, or the check means nothing
    with torch.no_grad():
        logits = model(**inputs).logits[0, -1].float()
    return float(torch.softmax(logits, dim=-1)[yes])


def test_the_command_gives_the_full_vocabulary_p_yes_of_a_plain_forward(tmp_path, tiny_vlm_path):
    model = tiny_vlm_path("qwen3_vl", yes_bias=2.0)
    images = write_images(tmp_path / "imgs")
    out = tmp_path / "run" / "vq.jsonl"
    code, stdout, err = run_vlmjudge(["vqascore", "score", str(images), "--prompts", str(write_prompts(tmp_path / "p.jsonl")),
                                      "--model", model, "--device", "cpu", "--out", str(out), "--quiet"])
    assert code == 0, err
    records = read_records(out)
    assert sorted(records) == sorted(f"{stem}.png" for stem in PROMPTS)
    for stem, prompt in PROMPTS.items():
        record = records[f"{stem}.png"]
        expected = direct_p_yes(model, Image.open(images / f"{stem}.png").convert("RGB"), prompt)
        assert record["status"] == "scored" and record["score"] == record["p_yes"]
        assert record["score"] == pytest.approx(expected, rel=1e-3)
        assert 0 < record["option_mass"] <= 1 and not record["truncated"]
    manifest = json.loads((tmp_path / "run" / "vq.manifest.json").read_text())
    assert manifest["method"] == "vqascore" and manifest["question"] == QUESTION and manifest["normalize"] is False
    assert "scored 3, not applicable 0, failed 0 of 3" in stdout


def test_fagers_ab_baseline_gives_the_same_numbers_on_the_same_question(tiny_vlm_path):
    """FAGER keeps its own VQAScore-style baseline (a method package imports no other): asked the
    same question of the same judge, both give the same P("Yes")."""
    from fager.baselines import VQAScoreBaseline

    judge = load_judge(tiny_vlm_path("qwen3_vl", yes_bias=2.0), device="cpu")
    images = [Image.new("RGB", (48, 48), c) for c in ("red", "navy", "olive")]
    prompts = list(PROMPTS.values())
    ours = [r.score for r in VQAScore(judge).score(images, prompts)]
    fagers = VQAScoreBaseline(judge, {"baseline": {"user": QUESTION}}).score(images, prompts)
    assert all(s is not None and 0 < s < 1 for s in ours)
    assert fagers == ours


def test_the_spec_passes_the_conformance_suite(tiny_vlm_path):
    judge = load_judge(tiny_vlm_path("qwen3_vl"), device="cpu")
    batch = {"image": [Image.new("RGB", (40, 40), "red"), Image.new("RGB", (48, 32), "blue")],
             "prompt": ["a red square", "a blue square"], "id": ["a", "b"]}
    records = check_method(SPEC, judge, batch)
    assert [r.id for r in records] == ["a", "b"] and all(r.status == "scored" for r in records)


class TopKJudge(Judge):
    """A judge whose server listed only some tokens: "Yes" unseen (a bound) for item "cut", seen for "ok"."""

    backend = "topk"

    def _generate(self, requests):
        return [Answer("Yes") for _ in requests]

    def _choice_probs(self, requests, options):
        return self._choice_probs_raw(requests, options)

    def _choice_probs_raw(self, requests, options):
        out = []
        for request in requests:
            if request.meta["item_id"] == "cut":
                out.append(OptionProbs.from_raw({"No": 0.9}, options, normalize=False, bounds={"Yes": 0.02}))
            else:
                out.append(OptionProbs.from_raw({"Yes": 0.625}, options, normalize=False, bounds={"No": 0.1}))
        return out


def test_a_bounded_p_yes_fails_the_image_and_is_never_its_score():
    images = [Image.new("RGB", (32, 32), "red"), Image.new("RGB", (32, 32), "blue")]  # identical requests would be asked once
    records = VQAScore(TopKJudge()).score(images, ["a cat", "a cat"], ["cut", "ok"])
    cut, ok = (r.to_json() for r in records)
    assert cut["status"] == "failed" and cut["score"] is None and cut["truncated"] is True
    assert cut["bounds"] == {"Yes": 0.02} and cut["p_no"] == 0.9 and "upper bound" in cut["error"]
    # only "No" unseen: P("Yes") itself is exact, so the image is scored, flagged as truncated
    assert ok["status"] == "scored" and ok["score"] == 0.625 and ok["truncated"] is True and ok["p_no"] is None


def test_a_recorded_text_answer_is_no_probability():
    judge = load_judge({"a": "Yes", "b": {"probs": {"Yes": 0.5, "No": 0.25}}}, backend="replay", key_fields=["item_id"])
    a, b = VQAScore(judge).score([Image.new("RGB", (32, 32))] * 2, ["a cat", "a dog"], ["a", "b"])
    assert a.status == "failed" and "no probability" in a.error
    assert b.score == 0.5 and b.option_mass == 0.75


def test_a_prompt_with_braces_is_placed_as_text():
    assert load_pack().ask("a sign reading {prompt} and {x}") == \
        'Does this figure show "a sign reading {prompt} and {x}"? Please answer yes or no.'


@pytest.mark.parametrize("prompts, message", [(["a cat", ""], "prompt 1"), (["a cat", None], "prompt 1"),
                                              (["a cat"], "one each per item")])
def test_bad_prompts_are_refused_before_any_request(prompts, message):
    judge = load_judge({}, backend="replay", key_fields=["item_id"])
    with pytest.raises(ValueError, match=message):
        VQAScore(judge).score([Image.new("RGB", (32, 32))] * 2, prompts)
    assert judge.stats.model_calls == 0


def test_the_metric_sums_scores_and_counts_failures():
    from t2ibaselines.vqascore.metric import VQAScoreMetric

    judge = load_judge({"0": {"probs": {"Yes": 0.75, "No": 0.25}}, "1": None}, backend="replay", key_fields=["item_id"])
    metric = VQAScoreMetric(judge)
    metric.update([Image.new("RGB", (32, 32))] * 2, ["a cat", "a dog"])
    details = metric.details()
    assert float(metric.compute()) == 0.75 and details["n_failed"] == 1 and details["scores"] == [0.75, None]
    with pytest.raises(TypeError, match="one prompt per image"):
        metric.update([Image.new("RGB", (32, 32))], "a")
    assert math.isnan(float(VQAScoreMetric(judge).compute()))
