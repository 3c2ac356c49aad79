"""PickScore on a tiny CLIP loaded by `from_pretrained`: exp(logit_scale) * cosine as the authors'
model card computes it, batched items equal to one-at-a-time, softmax over candidates."""
from __future__ import annotations

import math

import pytest
import torch

from t2ibaselines.trained.pickscore import SPEC, PickScoreScorer, preference_probs
from vlmjudge.testing.conformance import check_method

PROMPTS = ["a photo of a red cat", "a painting of a blue boat", "a cartoon of a yellow bird"]


def _model_card_scores(folder, prompt, images):
    """The model card's computation for one prompt and its candidate images."""
    from transformers import AutoModel, AutoProcessor

    processor, model = AutoProcessor.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    image_inputs = processor(images=images, padding=True, truncation=True, max_length=77, return_tensors="pt")
    text_inputs = processor(text=prompt, padding=True, truncation=True, max_length=77, return_tensors="pt")
    with torch.no_grad():
        image_embs = model.get_image_features(**image_inputs)
        image_embs = getattr(image_embs, "pooler_output", image_embs)
        image_embs = image_embs / torch.norm(image_embs, dim=-1, keepdim=True)
        text_embs = model.get_text_features(**text_inputs)
        text_embs = getattr(text_embs, "pooler_output", text_embs)
        text_embs = text_embs / torch.norm(text_embs, dim=-1, keepdim=True)
        scores = model.logit_scale.exp() * (text_embs @ image_embs.T)[0]
    return scores.tolist(), torch.softmax(scores, dim=-1).tolist()


def test_pickscore_equals_the_model_card_and_its_softmax(tiny_encoder_dirs, noise):
    folder = tiny_encoder_dirs["clip"]
    images = noise(3)
    scorer = PickScoreScorer(model=folder, processor=folder, device="cpu", batch_size=2)
    records = scorer.score_batch({"image": images, "prompt": [PROMPTS[0]] * 3})
    want_scores, want_probs = _model_card_scores(folder, PROMPTS[0], images)
    assert [r.score for r in records] == pytest.approx(want_scores, rel=1e-5, abs=1e-5)
    assert preference_probs([r.score for r in records]) == pytest.approx(want_probs, rel=1e-5)
    assert len({round(s, 4) for s in want_scores}) == 3, "equal scores would not test the order of items"


def test_each_item_is_scored_against_its_own_prompt(tiny_encoder_dirs, noise):
    folder = tiny_encoder_dirs["clip"]
    images = noise(3)
    batched = PickScoreScorer(model=folder, processor=folder, device="cpu").score_batch(
        {"image": images, "prompt": PROMPTS})
    for image, prompt, record in zip(images, PROMPTS, batched):
        [alone], _ = _model_card_scores(folder, prompt, [image])
        assert math.isclose(record.score, alone, rel_tol=1e-5, abs_tol=1e-5)


def test_a_logit_scale_above_clips_clamp_is_refused(tmp_path, tiny_encoder_dirs):
    from transformers import AutoModel, AutoProcessor

    model = AutoModel.from_pretrained(tiny_encoder_dirs["clip"])
    with torch.no_grad():
        model.logit_scale.fill_(math.log(150.0))
    model.save_pretrained(tmp_path / "wide")
    AutoProcessor.from_pretrained(tiny_encoder_dirs["clip"]).save_pretrained(tmp_path / "wide")
    with pytest.raises(ValueError, match=r"exp\(logit_scale\) = 150, outside CLIP's \(0, 100\]"):
        PickScoreScorer(model=str(tmp_path / "wide"), processor=str(tmp_path / "wide"), device="cpu")


def test_preference_probs_refuses_what_is_not_a_finite_score():
    with pytest.raises(ValueError):
        preference_probs([1.0, float("nan")])
    with pytest.raises(ValueError):
        preference_probs([])


def test_pickscore_passes_the_method_conformance_suite(tiny_encoder_dirs, noise):
    folder = tiny_encoder_dirs["clip"]
    check_method(SPEC, None, {"image": noise(2), "prompt": PROMPTS[:2]},
                 config={"model": folder, "processor": folder, "device": "cpu"})
