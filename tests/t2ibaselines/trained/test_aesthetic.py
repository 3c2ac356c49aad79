"""LAION-Aesthetic v2.5 through `convert_v2_5_from_siglip`: a tiny SigLIP loaded by `from_pretrained`
and a head file of the package's own `AestheticPredictorV2_5Head`, scored as the package's README does."""
from __future__ import annotations

import sys

import pytest
import torch

from t2ibaselines.trained.aesthetic import SPEC, AestheticScorer
from t2ibaselines.trained.base import MissingExtraError
from vlmjudge.testing.conformance import check_method


@pytest.fixture(scope="module")
def head_file(tmp_path_factory, tiny_siglip, package):
    """A head of the package's class for the tiny SigLIP's width, its last bias set inside the 1-10 scale."""
    predictor = package("aesthetic_predictor_v2_5")
    from transformers import SiglipVisionConfig

    torch.manual_seed(0)
    head = predictor.AestheticPredictorV2_5Head(SiglipVisionConfig.from_pretrained(tiny_siglip))
    with torch.no_grad():
        head.scoring_head[-1].bias.fill_(5.0)
    path = tmp_path_factory.mktemp("aesthetic") / "head.pth"
    torch.save(head.state_dict(), path)
    return str(path)


def test_aesthetic_equals_the_packages_own_scoring(head_file, tiny_siglip, noise):
    from aesthetic_predictor_v2_5 import convert_v2_5_from_siglip

    images = noise(3)
    records = AestheticScorer(predictor=head_file, encoder=str(tiny_siglip), device="cpu", batch_size=2).score_batch(
        {"image": images})
    model, preprocessor = convert_v2_5_from_siglip(predictor_name_or_path=head_file, encoder_model_name=str(tiny_siglip),
                                                   low_cpu_mem_usage=True, trust_remote_code=True)
    for image, record in zip(images, records):
        with torch.inference_mode():
            want = float(model(preprocessor(images=image, return_tensors="pt").pixel_values).logits.squeeze())
        assert record.status == "scored" and record.score == pytest.approx(want, rel=1e-5)
    assert len({round(r.score, 5) for r in records}) == 3, "equal scores would not test the order of items"


def test_the_siglip_tower_is_loaded_not_left_random(head_file, tiny_siglip, noise):
    """The encoder's pooled features equal those of SiglipVisionModel loaded from the same folder."""
    from aesthetic_predictor_v2_5 import convert_v2_5_from_siglip
    from transformers import AutoProcessor, SiglipVisionModel

    model, _ = convert_v2_5_from_siglip(predictor_name_or_path=head_file, encoder_model_name=str(tiny_siglip))
    pixels = AutoProcessor.from_pretrained(tiny_siglip)(images=noise(1), return_tensors="pt").pixel_values
    with torch.inference_mode():
        ours = model(pixels).hidden_states
        reference = SiglipVisionModel.from_pretrained(tiny_siglip)(pixel_values=pixels).pooler_output
    assert torch.allclose(ours, reference, atol=1e-5)


def test_a_missing_head_file_is_refused_instead_of_downloading_the_release(tmp_path, tiny_siglip, package):
    package("aesthetic_predictor_v2_5")
    with pytest.raises(FileNotFoundError, match="aesthetic: no predictor head file at"):
        AestheticScorer(predictor=str(tmp_path / "absent.pth"), encoder=str(tiny_siglip), device="cpu")


def test_without_the_package_the_method_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "aesthetic_predictor_v2_5", None)
    with pytest.raises(MissingExtraError, match=r"^aesthetic needs the 'aesthetic' extra: pip install "
                                                 r"'vlmjudge\[aesthetic\]' \(aesthetic_predictor_v2_5 is not installed\)$"):
        AestheticScorer(device="cpu")


def test_aesthetic_passes_the_method_conformance_suite(head_file, tiny_siglip, noise):
    check_method(SPEC, None, {"image": noise(2)}, config={"predictor": head_file, "encoder": str(tiny_siglip),
                                                          "device": "cpu"})
