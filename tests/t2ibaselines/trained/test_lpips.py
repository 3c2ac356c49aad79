"""LPIPS through torchmetrics, its backbone loaded the way torchvision loads ImageNet weights (from
torch hub's cache, where random SqueezeNet weights are planted, as nothing may be downloaded)."""
from __future__ import annotations

import math

import pytest
import torch
from PIL import Image
from torchvision.transforms.functional import to_tensor

from t2ibaselines.trained.lpips import SPEC, LpipsScorer
from vlmjudge.testing.conformance import check_method


@pytest.fixture
def squeeze_weights(tmp_path, monkeypatch):
    """Random SqueezeNet 1.1 weights under the file name torchvision looks for in torch hub's cache."""
    import torchvision

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    checkpoints = tmp_path / "torch_home" / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    url = torchvision.models.SqueezeNet1_1_Weights.DEFAULT.url
    torch.manual_seed(0)
    torch.save(torchvision.models.squeezenet1_1(weights=None).state_dict(), checkpoints / url.rsplit("/", 1)[1])
    return checkpoints


def _functional(image, reference):
    from torchmetrics.functional.image.lpips import learned_perceptual_image_patch_similarity

    return float(learned_perceptual_image_patch_similarity(
        to_tensor(image).unsqueeze(0), to_tensor(reference).unsqueeze(0), net_type="squeeze", reduction="none",
        normalize=True))


def test_lpips_equals_torchmetrics_functional_form(squeeze_weights, noise):
    images, references = noise(3, seed=1), noise(3, seed=2)
    records = LpipsScorer(net="squeeze", device="cpu").score_batch({"image": images, "reference": references})
    for record, image, reference in zip(records, images, references):
        want = _functional(image, reference)
        assert want > 0 and math.isclose(record.score, want, rel_tol=1e-5)
        assert record.to_json()["reference_resized"] is False


def test_an_image_against_itself_is_zero_and_a_smaller_reference_is_resized(squeeze_weights, noise):
    image = noise(1, sizes=((64, 48),))[0]
    small = image.resize((32, 24), Image.BICUBIC)
    same, resized = LpipsScorer(net="squeeze", device="cpu").score_batch(
        {"image": [image, image], "reference": [image, small], "id": ["same", "small"]})
    assert same.score == pytest.approx(0.0, abs=1e-6)
    assert resized.to_json()["reference_resized"] is True
    assert resized.score == pytest.approx(_functional(image, small.resize((64, 48), Image.BICUBIC)), rel=1e-5)


def test_a_fixed_size_resizes_both_images(squeeze_weights, noise):
    image, reference = noise(2, sizes=((64, 48), (40, 56)))
    [record] = LpipsScorer(net="squeeze", size=32, device="cpu").score_batch({"image": [image], "reference": [reference]})
    want = _functional(image.resize((32, 32), Image.BICUBIC), reference.resize((32, 32), Image.BICUBIC))
    assert record.score == pytest.approx(want, rel=1e-5) and "reference_resized" not in record.to_json()


def test_a_missing_reference_is_a_counted_failure(squeeze_weights, noise):
    image = noise(1)[0]
    good, bad = LpipsScorer(net="squeeze", device="cpu").score_batch(
        {"image": [image, image], "reference": [image, b"not an image"]})
    assert good.status == "scored" and bad.status == "failed" and bad.error.startswith("reference:")


@pytest.mark.parametrize("config, message", [({"net": "resnet"}, "net must be one of"),
                                             ({"size": 8}, "size must be a whole number"),
                                             ({"size": True}, "size must be a whole number")])
def test_bad_settings_are_refused(config, message):
    with pytest.raises(ValueError, match=message):
        LpipsScorer(device="cpu", **config)


def test_lpips_passes_the_method_conformance_suite(squeeze_weights, noise):
    check_method(SPEC, None, {"image": noise(2, seed=3), "reference": noise(2, seed=4)},
                 config={"net": "squeeze", "device": "cpu"})
    assert SPEC.statistics["mean_score"].higher_is_better is False
