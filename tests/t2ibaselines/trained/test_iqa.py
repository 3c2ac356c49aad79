"""MUSIQ, NIQE and BRISQUE through pyiqa's `create_metric`, each loading a small file made here the
way pyiqa loads its released one: a tiny MUSIQ of pyiqa's own class, NIQE's and BRISQUE's model
parameters in the released files' layout (random, well-conditioned)."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch
from torchvision.transforms.functional import to_tensor

from t2ibaselines.trained.base import MissingExtraError
from t2ibaselines.trained.iqa import BRISQUE_SPEC, MUSIQ_SPEC, NIQE_SPEC, IQAScorer
from vlmjudge.testing.conformance import check_method

TINY_MUSIQ = {"hidden_size": 32, "mlp_dim": 64, "num_heads": 2, "num_layers": 1}


@pytest.fixture(scope="module")
def iqa_files(tmp_path_factory, package):
    """{"musiq": tiny MUSIQ weights, "niqe": a .mat of pristine-model statistics, "brisque": SVM terms}."""
    package("pyiqa")
    import scipy.io
    from pyiqa.archs.musiq_arch import MUSIQ

    root = tmp_path_factory.mktemp("iqa")
    torch.manual_seed(0)
    musiq = MUSIQ(pretrained=False, **TINY_MUSIQ)
    with torch.no_grad():
        musiq.head.bias.fill_(50.0)  # a MOS-like output inside MUSIQ's declared 0-100
    torch.save(musiq.state_dict(), root / "musiq.pth")
    rng = np.random.default_rng(0)
    spread = rng.normal(size=(36, 36))
    scipy.io.savemat(root / "niqe.mat", {"mu_prisparam": rng.normal(size=(1, 36)) * 0.1,
                                        "cov_prisparam": spread @ spread.T / 36 + np.eye(36)})
    # support vectors in the [-1, 1] of BRISQUE's scaled features; coefficients that bring the score into 0-150
    support = torch.tensor(rng.uniform(-1, 1, size=(40, 36)))
    torch.save((torch.tensor(-8.0 + rng.normal(size=40)), support), root / "brisque.pth")
    return {name: str(root / f"{name}.pth" if name != "niqe" else root / "niqe.mat") for name in ("musiq", "niqe", "brisque")}


def _direct(name, weights, image, **options):
    import pyiqa

    metric = pyiqa.create_metric(name, device="cpu", pretrained_model_path=weights, **options)
    return float(torch.as_tensor(metric(to_tensor(image).unsqueeze(0))).reshape(-1)[0])


@pytest.mark.parametrize("method", ["musiq", "niqe", "brisque"])
def test_each_metric_equals_pyiqa_on_the_same_file(method, iqa_files, noise):
    options = {"options": TINY_MUSIQ} if method == "musiq" else {}
    images = noise(3, sizes=((96, 96), (128, 96), (112, 144)))
    records = IQAScorer(method, weights=iqa_files[method], device="cpu", **options).score_batch({"image": images})
    for image, record in zip(images, records):
        want = _direct(method, iqa_files[method], image, **options.get("options", {}))
        assert math.isfinite(want)
        if record.status == "scored":
            assert math.isclose(record.score, want, rel_tol=1e-6)
        else:  # outside the declared range: kept as raw_score, never as a score
            assert record.raw_score == pytest.approx(want, rel=1e-6) and record.score is None
    assert any(r.status == "scored" for r in records)
    assert records[0].made_by["package"].startswith("pyiqa ") and records[0].made_by["metric"] == method


def test_directions_follow_pyiqa():
    assert MUSIQ_SPEC.statistics["mean_score"].higher_is_better is True
    assert NIQE_SPEC.statistics["mean_score"].higher_is_better is False
    assert BRISQUE_SPEC.statistics["mean_score"].higher_is_better is False


def test_a_missing_weights_file_is_refused_instead_of_a_download(tmp_path, package):
    package("pyiqa")
    with pytest.raises(FileNotFoundError, match="niqe: no weights file at"):
        IQAScorer("niqe", weights=str(tmp_path / "absent.mat"), device="cpu")
    with pytest.raises(FileNotFoundError):
        IQAScorer("brisque", weights=str(tmp_path), device="cpu")  # a folder is not a weights file


def test_without_pyiqa_each_method_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyiqa", None)
    for method in ("musiq", "niqe", "brisque"):
        with pytest.raises(MissingExtraError, match=rf"^{method} needs the 'iqa' extra: pip install 'vlmjudge\[iqa\]' "
                                                     r"\(pyiqa is not installed\)$"):
            IQAScorer(method, device="cpu")


def test_an_unknown_method_is_refused():
    with pytest.raises(ValueError, match="no pyiqa method 'clipiqa'"):
        IQAScorer("clipiqa")


def test_musiq_passes_the_method_conformance_suite(iqa_files, noise):
    check_method(MUSIQ_SPEC, None, {"image": noise(2, sizes=((96, 96), (64, 80)))},
                 config={"weights": iqa_files["musiq"], "device": "cpu", "options": TINY_MUSIQ})
