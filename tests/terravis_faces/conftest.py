"""Shared fixtures of the TerraVis faces: a tiny random Qwen3-VL built offline once per
session, a short prompt pack, a few small images in two "T2I model" folders, and the
Python API's records on them, which every face must reproduce."""
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from terravis import TYPE_IDS

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
METRIC_DIR = REPO / "metrics" / "terravis"

#: Short templates and bounded strings keep a random model's generations cheap. With the
#: tiny model's bias towards "Yes" (8 nats), True/False eligibility words give a mix of
#: eligible and N/A images, and Yes/No detections a few violations per image.
TEST_PACK = {
    "system": "Judge the image.", "eligibility": "Is this a real picture?", "detection": "Look at the image.",
    "question": "{examples}{question}", "severity": "Is the {aspect} problem ({evidence}) serious?",
    "options": {"eligibility": ["True", "False"]},
    "questions": {t: f"Is there a {t.replace('_', ' ')} problem?" for t in TYPE_IDS},
    "limits": {"reason": 24, "aspect": 12, "evidence": 24}, "max_new_tokens": {"reason": 40, "evidence": 64},
}


def make_images(root: Path) -> dict[str, Path]:
    """64x64 PNGs under <root>/modelA and <root>/modelB, by id (the path relative to root)."""
    rng = np.random.default_rng(0)
    pictures = {"modelA/white.png": Image.new("RGB", (64, 64), "white"),
                "modelA/red.png": Image.new("RGB", (64, 64), "red"),
                "modelB/noise.png": Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)),
                "modelB/black.png": Image.new("RGB", (64, 64), "black")}
    paths = {}
    for rel, picture in pictures.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        picture.save(path)
        paths[rel] = path
    return paths


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    pytest.importorskip("xgrammar")
    pytest.importorskip("vlmjudge.backends.transformers")
    from vlmjudge.testing import build_tiny_vlm
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "qwen3vl", family="qwen3_vl", yes_bias=8.0)


@pytest.fixture(scope="session")
def pack_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pack") / "faces-pack.json"
    path.write_text(json.dumps(TEST_PACK))
    return path


@pytest.fixture(scope="session")
def images(tmp_path_factory):
    return make_images(tmp_path_factory.mktemp("images") / "imgs")


@pytest.fixture(scope="session")
def reference(tiny_model, pack_file, images):
    """The Python API's records, by image id: what every face must reproduce."""
    from terravis import TerraVis
    from vlmjudge import load_judge, to_pil
    tv = TerraVis(load_judge(tiny_model, device="cpu"), pack=pack_file)
    ids = list(images)
    records = tv.score([to_pil(images[i]) for i in ids], ids=ids)
    by_id = dict(zip(ids, records))
    statuses = {r.status for r in records}
    assert statuses == {"scored", "not_applicable"}, f"the tiny model gave no mix of eligibility: {statuses}"
    assert any(r.n_major + r.n_minor for r in records), "the tiny model found no violation at all"
    return by_id


def mean_score(records):
    scores = [r.score for r in records if r.score is not None]
    return sum(scores) / len(scores)


def subprocess_env(tmp_path: Path) -> dict[str, str]:
    """An offline environment with a throwaway HF home (module caches never leak)."""
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    env.pop("HF_MODULES_CACHE", None)
    env.pop("HF_EVALUATE_CACHE", None)
    return env


PYTHON = sys.executable
