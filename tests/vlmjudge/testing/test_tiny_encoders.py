"""Tiny CLIP / DINOv2 / SigLIP checkpoints: small, seeded, and loadable by the Auto classes for real embeddings."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image
from transformers import AutoModel, AutoProcessor

from vlmjudge.testing.tiny_encoders import build_tiny_clip, build_tiny_dinov2, build_tiny_siglip

BUILDERS = {"clip": build_tiny_clip, "dinov2": build_tiny_dinov2, "siglip": build_tiny_siglip}
PROMPTS = ["a photo of a cat", "a photo of a dog"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("encoders")
    return {name: build(root / name) for name, build in BUILDERS.items()}


@pytest.fixture(scope="module")
def images() -> list[Image.Image]:
    red = Image.new("RGB", (40, 56), (220, 20, 20))
    stripes = Image.new("RGB", (64, 48), (10, 10, 10))
    stripes.paste((240, 240, 240), (0, 0, 64, 24))
    return [red, stripes]


def load(path: str):
    return AutoModel.from_pretrained(path).eval(), AutoProcessor.from_pretrained(path)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_small_and_returns_its_folder(built, name):
    folder = Path(built[name])
    assert folder.is_dir() and (folder / "model.safetensors").is_file() and (folder / "config.json").is_file()
    total = sum(f.stat().st_size for f in folder.iterdir())
    assert total < 2_000_000, total


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_seeded_and_leaves_global_rng_alone(tmp_path, built, name):
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    again = BUILDERS[name](tmp_path / "again")
    assert torch.equal(torch.rand(3), expected_next)
    same = (Path(again) / "model.safetensors").read_bytes()
    assert same == (Path(built[name]) / "model.safetensors").read_bytes()
    other = BUILDERS[name](tmp_path / "other", seed=1)
    assert (Path(other) / "model.safetensors").read_bytes() != same


def test_clip_image_and_text_features(built, images):
    model, processor = load(built["clip"])
    assert type(model).__name__ == "CLIPModel"
    assert type(processor).__name__ == "CLIPProcessor" and hasattr(processor, "image_processor")
    inputs = processor(text=PROMPTS, images=images, padding=True, return_tensors="pt")
    assert inputs["pixel_values"].shape == (2, 3, 32, 32)
    with torch.no_grad():
        image_features = model.get_image_features(pixel_values=inputs["pixel_values"]).pooler_output
        text_features = model.get_text_features(
            input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]
        ).pooler_output
        logits = model(**inputs).logits_per_image
    assert image_features.shape == (2, model.config.projection_dim)
    assert text_features.shape == (2, model.config.projection_dim)
    assert logits.shape == (2, 2) and torch.isfinite(logits).all()
    assert not torch.allclose(image_features[0], image_features[1])
    # the text tower is causal and pools at the end-of-text token: prompts that differ only
    # in their last word must differ, which fails if the eos id in the config were wrong
    assert not torch.allclose(text_features[0], text_features[1])


def test_clip_tokenizer_keeps_caption_words_whole(built):
    _, processor = load(built["clip"])
    tokens = processor.tokenizer.tokenize("a photo of a cat")
    assert tokens == ["a</w>", "photo</w>", "of</w>", "a</w>", "cat</w>"]


def test_siglip_image_and_text_features(built, images):
    model, processor = load(built["siglip"])
    assert type(model).__name__ == "SiglipModel"
    assert type(processor).__name__ == "SiglipProcessor" and hasattr(processor, "image_processor")
    inputs = processor(text=PROMPTS, images=images, padding="max_length", truncation=True, return_tensors="pt")
    assert inputs["input_ids"].shape == (2, processor.tokenizer.model_max_length)
    assert inputs["pixel_values"].shape == (2, 3, 32, 32)
    with torch.no_grad():
        image_features = model.get_image_features(pixel_values=inputs["pixel_values"]).pooler_output
        text_features = model.get_text_features(input_ids=inputs["input_ids"]).pooler_output
        probs = torch.sigmoid(model(**inputs).logits_per_image)
    assert image_features.shape == (2, model.config.vision_config.hidden_size)
    assert text_features.shape == (2, model.config.text_config.projection_size)
    assert not torch.allclose(text_features[0], text_features[1])
    assert not torch.allclose(image_features[0], image_features[1])
    assert probs.shape == (2, 2) and ((probs > 0) & (probs < 1)).all()


def test_siglip_tokenizer_follows_siglip_conventions(built):
    _, processor = load(built["siglip"])
    tok = processor.tokenizer
    ids = tok("A Photo of a CAT")["input_ids"]
    assert ids == tok("a photo of a cat")["input_ids"]  # lowercased
    assert ids[-1] == tok.eos_token_id and tok.pad_token_id == tok.eos_token_id
    assert tok.unk_token_id not in ids


def test_dinov2_patch_tokens(built, images):
    model, processor = load(built["dinov2"])
    assert type(model).__name__ == "Dinov2Model"
    assert hasattr(processor, "crop_size")  # an image processor, not a tokenizer
    inputs = processor(images=images, return_tensors="pt")
    assert inputs["pixel_values"].shape == (2, 3, 32, 32)
    with torch.no_grad():
        hidden = model(**inputs).last_hidden_state
    patches = (32 // model.config.patch_size) ** 2
    assert hidden.shape == (2, 1 + patches, model.config.hidden_size)
    pooled = hidden.mean(dim=1)
    assert torch.isfinite(pooled).all() and not torch.allclose(pooled[0], pooled[1])


def test_image_size_must_fit_patches(tmp_path):
    with pytest.raises(ValueError, match="multiple of 8"):
        build_tiny_clip(tmp_path / "bad", image_size=30)
