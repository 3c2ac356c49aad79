"""Shared helpers of the TerraVis faces tests (a uniquely named module: the helper folders share one
pythonpath, so a bare `helpers` import could pick another folder's)."""
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from terravis import TYPE_IDS, save_records, score_annotation

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


def annotated(image_id, model=None, path=None, violations=(), eligible=True):
    """One scored TerraVis record for the report tests, violations given as (type, severity, evidence)."""
    meta = {k: v for k, v in (("model", model), ("path", path)) if v is not None}
    return score_annotation({"image_id": image_id, "eligible": eligible, "meta": meta,
                             "violations": [{"type": t, "severity": s, "aspect": "a hand", "evidence": e}
                                            for t, s, e in violations]})


def write_run(path, records, model="judge-A"):
    """Save `records` as one workflow run of `model`, the report's input."""
    save_records(path, records, {"method": "terravis", "variant": "workflow", "model": model, "backend": "replay",
                                 "lam": 1.0, "alpha": 0.5, "pack_version": "default-v1"})
    return path


def three_models(tmp_path):
    """m1: one clean image; m2: one major and one clean; m3: two minor violations, an N/A."""
    def p(rel):
        path = tmp_path / "imgs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (40, 30), "green").save(path)
        return str(path)
    return [
        annotated("m1/a.png", path=p("m1/a.png")),
        annotated("m2/a.png", path=p("m2/a.png"), violations=[("biological_anatomy", "major", "Six <b>fingers</b>.")]),
        annotated("m2/b.png", path=p("m2/b.png")),
        annotated("m3/a.png", path=p("m3/a.png"), violations=[("support_stability", "minor", "A cup floats."),
                                                              ("optical_effect", "minor", "No shadow.")]),
        annotated("m3/b.png", path=str(tmp_path / "imgs" / "m3" / "gone.png"), eligible=False),
    ]
