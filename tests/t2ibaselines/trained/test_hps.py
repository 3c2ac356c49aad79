"""HPSv2 through the authors' package. Its extra pins pytest==7.2.0, so it is not in the test extra:
the one-line error always runs; the real-path test (a tiny open_clip model registered in the
package's own open_clip, its checkpoint saved as the releases are) runs where hpsv2 imports."""
from __future__ import annotations

import json
import sys

import pytest
import torch

from t2ibaselines.trained.base import MissingExtraError
from t2ibaselines.trained.hps import SPEC, HPSv2Scorer
from vlmjudge.testing.conformance import check_method

TINY = {"embed_dim": 16, "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}


def test_without_hpsv2_the_method_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "hpsv2", None)
    with pytest.raises(MissingExtraError) as error:
        HPSv2Scorer(device="cpu")
    assert str(error.value) == "hpsv2 needs the 'hpsv2' extra: pip install 'vlmjudge[hpsv2]' (hpsv2 is not installed)"


@pytest.fixture(scope="module")
def tiny_hps(tmp_path_factory, package):
    """(arch name, checkpoint file): a tiny config added to hpsv2's open_clip, weights as {'state_dict': ...}."""
    open_clip = package("hpsv2.src.open_clip")
    root = tmp_path_factory.mktemp("hps")
    (root / "tiny-hps.json").write_text(json.dumps(TINY))
    open_clip.add_model_config(root / "tiny-hps.json")
    torch.manual_seed(0)
    model, _, _ = open_clip.create_model_and_transforms("tiny-hps", None, output_dict=True)
    torch.save({"state_dict": model.state_dict()}, root / "hps.pt")
    return "tiny-hps", str(root / "hps.pt")


def test_hps_equals_the_packages_one_image_scoring(tiny_hps, noise):
    """hpsv2.img_score scores one image at a time: same model, same preprocessing, same numbers batched."""
    from hpsv2.src.open_clip import create_model_and_transforms, get_tokenizer

    arch, checkpoint = tiny_hps
    images, prompts = noise(3), ["a red cat", "a blue house", "a photo of a dog"]
    records = HPSv2Scorer(checkpoint=checkpoint, arch=arch, device="cpu", batch_size=2).score_batch(
        {"image": images, "prompt": prompts})
    model, _, preprocess_val = create_model_and_transforms(arch, None, light_augmentation=True, output_dict=True)
    model.load_state_dict(torch.load(checkpoint, map_location="cpu")["state_dict"])
    model.eval()
    tokenizer = get_tokenizer(arch)
    for image, prompt, record in zip(images, prompts, records):
        with torch.no_grad():
            outputs = model(preprocess_val(image).unsqueeze(0), tokenizer([prompt]))
            want = float(torch.diagonal(outputs["image_features"] @ outputs["text_features"].T)[0])
        assert record.status == "scored" and record.score == pytest.approx(want, rel=1e-5, abs=1e-6)
    assert records[0].made_by["checkpoint"] == checkpoint and records[0].made_by["version"] is None


def test_a_file_that_is_not_an_hps_checkpoint_is_refused(tiny_hps, tmp_path):
    arch, _ = tiny_hps
    torch.save({"weights": {}}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="holds no 'state_dict'"):
        HPSv2Scorer(checkpoint=str(tmp_path / "other.pt"), arch=arch, device="cpu")
    with pytest.raises(ValueError, match="no open_clip model config named 'ViT-Q-99'"):
        HPSv2Scorer(checkpoint=str(tmp_path / "other.pt"), arch="ViT-Q-99", device="cpu")
    with pytest.raises(ValueError, match="version must be one of"):
        HPSv2Scorer(version="v3", arch=arch, device="cpu")


def test_hpsv2_passes_the_method_conformance_suite(tiny_hps, noise):
    arch, checkpoint = tiny_hps
    check_method(SPEC, None, {"image": noise(2), "prompt": ["a red cat", "a blue car"]},
                 config={"checkpoint": checkpoint, "arch": arch, "device": "cpu"})
