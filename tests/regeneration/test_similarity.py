"""CLIP % and DINO % equal a direct computation from the models' own outputs."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import AutoImageProcessor, AutoModel, CLIPModel

from regeneration.similarity import ClipEncoder, DinoEncoder, SimilarityScorer, regeneration_similarity
from regeneration.scoring import cosine_percent


def images(n: int, seed: int) -> list[Image.Image]:
    rng = np.random.RandomState(seed)
    sizes = [(40, 56), (64, 48), (32, 32), (50, 50), (33, 70)]
    return [Image.fromarray(rng.randint(0, 256, size=(*sizes[k % 5][::-1], 3), dtype=np.uint8)) for k in range(n)]


def direct_percent(a: torch.Tensor, b: torch.Tensor) -> list[float]:
    a, b = a.double(), b.double()
    return (100 * (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))).tolist()


def test_cosine_percent_by_hand():
    a = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]])
    b = torch.tensor([[1.0, 1.0], [0.0, -5.0], [6.0, 8.0]])
    got = cosine_percent(a, b).tolist()
    assert got[0] == pytest.approx(100 / math.sqrt(2), abs=1e-9)
    assert got[1] == pytest.approx(-100.0, abs=1e-9)
    assert got[2] == pytest.approx(100.0, abs=1e-9)
    with pytest.raises(ValueError, match="shapes differ"):
        cosine_percent(a, b[:2])


def test_clip_matches_get_image_features(encoder_dirs):
    refs, gens = images(4, 1), images(4, 2)
    model = CLIPModel.from_pretrained(encoder_dirs["clip"]).eval()
    proc = AutoImageProcessor.from_pretrained(encoder_dirs["clip"])
    with torch.no_grad():
        def feats(imgs):
            out = model.get_image_features(**proc(images=imgs, return_tensors="pt"))
            return out if isinstance(out, torch.Tensor) else out.pooler_output
        expected = direct_percent(feats(refs), feats(gens))
    ours = SimilarityScorer(ClipEncoder(encoder_dirs["clip"], device="cpu"), None).score(refs, gens)
    assert [s["clip"] for s in ours] == pytest.approx(expected, abs=1e-5)
    assert len({round(e, 3) for e in expected}) == 4  # the pairs really differ


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_dino_matches_last_hidden_state(encoder_dirs, pooling):
    refs, gens = images(3, 3), images(3, 4)
    model = AutoModel.from_pretrained(encoder_dirs["dino"]).eval()
    proc = AutoImageProcessor.from_pretrained(encoder_dirs["dino"])
    with torch.no_grad():
        def feats(imgs):
            hidden = model(**proc(images=imgs, return_tensors="pt")).last_hidden_state
            return hidden.mean(dim=1) if pooling == "mean" else hidden[:, 0]
        expected = direct_percent(feats(refs), feats(gens))
    ours = SimilarityScorer(None, DinoEncoder(encoder_dirs["dino"], pooling=pooling, device="cpu")).score(refs, gens)
    assert [s["dino"] for s in ours] == pytest.approx(expected, abs=1e-5)


def test_poolings_differ(encoder_dirs):
    refs, gens = images(2, 5), images(2, 6)
    mean = SimilarityScorer(None, DinoEncoder(encoder_dirs["dino"], pooling="mean", device="cpu")).score(refs, gens)
    cls = SimilarityScorer(None, DinoEncoder(encoder_dirs["dino"], pooling="cls", device="cpu")).score(refs, gens)
    assert abs(mean[0]["dino"] - cls[0]["dino"]) > 1e-3


def test_batched_equals_unbatched(encoder_dirs):
    refs, gens = images(5, 7), images(5, 8)
    big = SimilarityScorer(ClipEncoder(encoder_dirs["clip"], device="cpu", batch_size=32),
                           DinoEncoder(encoder_dirs["dino"], device="cpu", batch_size=32)).score(refs, gens)
    one = SimilarityScorer(ClipEncoder(encoder_dirs["clip"], device="cpu", batch_size=1),
                           DinoEncoder(encoder_dirs["dino"], device="cpu", batch_size=1)).score(refs, gens)
    for a, b in zip(big, one):
        assert a["clip"] == pytest.approx(b["clip"], abs=1e-5)
        assert a["dino"] == pytest.approx(b["dino"], abs=1e-5)


def test_identical_images_give_100(scorer):
    imgs = images(3, 9)
    for s in scorer.score(imgs, [im.copy() for im in imgs]):
        assert s["clip"] == pytest.approx(100.0, abs=1e-9)
        assert s["dino"] == pytest.approx(100.0, abs=1e-9)


def test_functional_mean_and_bad_input(encoder_dirs, scorer):
    refs, gens = images(3, 10), images(3, 11)
    per_pair = scorer.score(refs, gens)
    mean = regeneration_similarity(refs, gens, clip_model=encoder_dirs["clip"], dino_model=encoder_dirs["dino"],
                                   device="cpu")
    assert mean["clip"] == pytest.approx(sum(s["clip"] for s in per_pair) / 3, abs=1e-9)
    assert mean["dino"] == pytest.approx(sum(s["dino"] for s in per_pair) / 3, abs=1e-9)
    with pytest.raises(ValueError, match="2 references but 3"):
        scorer.score(refs[:2], gens)
    with pytest.raises(ValueError, match="no image pairs"):
        scorer.score([], [])
    with pytest.raises(ValueError, match="pooling"):
        DinoEncoder(encoder_dirs["dino"], pooling="max")
    with pytest.raises(TypeError, match="not a CLIP model"):
        ClipEncoder(encoder_dirs["dino"], device="cpu")
