"""CLIPScore through torchmetrics on tiny CLIP and SigLIP checkpoints loaded by `from_pretrained`:
equal to the definition computed directly with transformers, and loud where it cannot be exact."""
from __future__ import annotations

import math

import pytest
import torch

from t2ibaselines.trained.clipscore import SPEC, ClipScoreScorer
from vlmjudge.offline import ModelUnavailableError
from vlmjudge.testing.conformance import check_method

PROMPTS = ["a photo of a red cat", "a drawing of a blue house", "an image of a green tree", "a sketch of a dog"]


def _pooled(output):
    return output if hasattr(output, "dim") else output.pooler_output


def _direct_clipscore(folder, images, prompts, *, siglip=False):
    """max(100 * cos, 0) straight from transformers, the way each family is meant to be run."""
    from transformers import AutoModel, AutoProcessor

    model, processor = AutoModel.from_pretrained(folder).eval(), AutoProcessor.from_pretrained(folder)
    scores = []
    with torch.inference_mode():
        for image, prompt in zip(images, prompts):
            pixels = processor(images=[image], return_tensors="pt")["pixel_values"]
            if siglip:  # full-length padding, no attention mask, as SigLIP was trained
                ids = processor(text=[prompt], padding="max_length", truncation=True,
                                max_length=model.config.text_config.max_position_embeddings, return_tensors="pt")
                text = _pooled(model.get_text_features(input_ids=ids["input_ids"]))
            else:
                text = _pooled(model.get_text_features(**processor(text=[prompt], padding=True, return_tensors="pt")))
            image_features = _pooled(model.get_image_features(pixel_values=pixels))
            cosine = torch.nn.functional.cosine_similarity(image_features, text)
            scores.append(max(100 * float(cosine), 0.0))
    return scores


def _mostly_positive(folder, out, image, prompt, siglip):
    """The checkpoint at `folder`, its text head negated when needed so that its cosines are mostly
    positive: a random tiny model's features share one sign for every pair (a common direction
    dominates), and all-negative cosines would all clamp to 0 and prove nothing. The tiny tokenizer
    is trained anew in every session, so the sign is not fixed in advance."""
    from transformers import AutoModel, AutoProcessor

    if _direct_clipscore(folder, [image], [prompt], siglip=siglip)[0] > 0:
        return folder
    model = AutoModel.from_pretrained(folder)
    head = model.text_model.head if siglip else model.text_projection
    with torch.no_grad():
        for parameter in head.parameters():
            parameter.neg_()
    model.save_pretrained(out)
    AutoProcessor.from_pretrained(folder).save_pretrained(out)
    return str(out)


@pytest.mark.parametrize("family", ["clip", "siglip"])
def test_clipscore_equals_the_definition_computed_directly(family, tiny_encoder_dirs, tiny_siglip, noise, tmp_path):
    images = noise(8)
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(8)]
    folder = _mostly_positive(tiny_encoder_dirs["clip"] if family == "clip" else str(tiny_siglip), tmp_path / "model",
                              images[0], prompts[0], siglip=family == "siglip")
    records = ClipScoreScorer(model=folder, device="cpu").score_batch({"image": images, "prompt": prompts})
    expected = _direct_clipscore(folder, images, prompts, siglip=family == "siglip")
    assert sum(e > 0 for e in expected) >= 4, f"mostly clamped to 0: the comparison would prove little {expected}"
    for record, want in zip(records, expected):
        assert record.status == "scored" and math.isclose(record.score, want, rel_tol=1e-4, abs_tol=1e-4)
    assert records[0].made_by["package"].startswith("torchmetrics ") and records[0].made_by["model"] == folder


def test_a_long_prompt_is_cut_keeping_the_end_token_and_the_record_says_so(tiny_encoder_dirs, noise):
    """torchmetrics alone would cut the ids after the end token, and CLIP would pool another token."""
    from transformers import AutoModel, AutoProcessor

    folder = tiny_encoder_dirs["clip"]
    long_prompt = " ".join(["a photo of a red cat"] * 20)
    image = noise(1)[0]
    short, long = ClipScoreScorer(model=folder, device="cpu").score_batch(
        {"image": [image, image], "prompt": [PROMPTS[0], long_prompt]})
    assert short.to_json()["prompt_truncated"] is False and long.to_json()["prompt_truncated"] is True
    model, processor = AutoModel.from_pretrained(folder).eval(), AutoProcessor.from_pretrained(folder)
    with torch.inference_mode():
        ids = processor(text=[long_prompt], padding=True, truncation=True, max_length=32, return_tensors="pt")
        assert ids["input_ids"][0, -1] == processor.tokenizer.eos_token_id
        text = _pooled(model.get_text_features(**ids))
        pixels = processor(images=[image], return_tensors="pt")["pixel_values"]
        cosine = float(torch.nn.functional.cosine_similarity(_pooled(model.get_image_features(pixel_values=pixels)), text))
    assert long.score == pytest.approx(max(100 * cosine, 0.0), abs=1e-4)


def test_siglip_text_goes_in_unmasked_as_it_was_trained(tiny_siglip, noise):
    """The masked variant gives other numbers on the same model: the test above can tell them apart."""
    from transformers import AutoModel, AutoProcessor

    model, processor = AutoModel.from_pretrained(tiny_siglip).eval(), AutoProcessor.from_pretrained(tiny_siglip)
    ids = processor(text=[PROMPTS[0]], padding="max_length", truncation=True, max_length=32, return_tensors="pt")
    with torch.inference_mode():
        unmasked = _pooled(model.get_text_features(input_ids=ids["input_ids"]))
        masked = _pooled(model.get_text_features(**ids))
    assert not torch.allclose(unmasked, masked, atol=1e-4)


def test_a_nan_from_the_model_is_a_counted_failure(tmp_path, tiny_encoder_dirs, noise):
    from transformers import AutoModel, AutoProcessor

    model = AutoModel.from_pretrained(tiny_encoder_dirs["clip"])
    with torch.no_grad():
        model.visual_projection.weight.fill_(float("nan"))
    model.save_pretrained(tmp_path / "nan_clip")
    AutoProcessor.from_pretrained(tiny_encoder_dirs["clip"]).save_pretrained(tmp_path / "nan_clip")
    [record] = ClipScoreScorer(model=str(tmp_path / "nan_clip"), device="cpu").score_batch(
        {"image": noise(1), "prompt": [PROMPTS[0]]})
    assert record.to_json()["status"] == "failed" and record.score is None and "nan" in record.error


def test_a_naflex_siglip2_is_refused_before_loading(tmp_path):
    from transformers import Siglip2Config

    Siglip2Config().save_pretrained(tmp_path / "naflex")
    with pytest.raises(ValueError, match="NaFlex SigLIP2 .* use a fixed-resolution SigLIP2 checkpoint"):
        ClipScoreScorer(model=str(tmp_path / "naflex"), device="cpu")


def test_a_checkpoint_that_cannot_load_offline_is_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError, match=r"^clipscore: checkpoint 'nobody/no-such-clip' is not a local "
                                                     r"folder and not in the Hugging Face cache"):
        ClipScoreScorer(model="nobody/no-such-clip", device="cpu")


def test_clipscore_passes_the_method_conformance_suite(tiny_encoder_dirs, noise):
    records = check_method(SPEC, None, {"image": noise(3), "prompt": PROMPTS[:3], "id": ["a", "b", "c"]},
                           config={"model": tiny_encoder_dirs["clip"], "device": "cpu"})
    assert [r.id for r in records] == ["a", "b", "c"] and SPEC.default_model is None
