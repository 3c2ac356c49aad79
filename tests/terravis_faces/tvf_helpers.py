"""Shared helpers of the TerraVis faces tests (a uniquely named module: test folders are not
packages, so a bare `conftest` or `helpers` import could pick another folder's)."""
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from terravis import TYPE_IDS

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
METRIC_DIR = REPO / "metrics" / "terravis"
PYTHON = sys.executable

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
