"""The Space app (metrics/regeneration/app.py) scores two uploaded images in headless chromium."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from browser import score_in_browser, serve_app

APP = Path(__file__).resolve().parents[2] / "metrics" / "regeneration" / "app.py"


def test_app_scores_uploaded_pair(tmp_path, chromium_path, encoder_dirs, scorer):
    reference, generated = tmp_path / "reference.png", tmp_path / "generated.png"
    Image.fromarray(np.random.RandomState(0).randint(0, 256, (48, 48, 3), dtype=np.uint8)).save(reference)
    Image.fromarray(np.random.RandomState(1).randint(0, 256, (48, 48, 3), dtype=np.uint8)).save(generated)
    env = {"REGENERATION_CLIP_MODEL": encoder_dirs["clip"], "REGENERATION_DINO_MODEL": encoder_dirs["dino"],
           "VLMJUDGE_DEVICE": "cpu", "HF_HUB_OFFLINE": "1", "VLMJUDGE_MODEL": ""}
    env = {k: v for k, v in {**os.environ, **env}.items() if not (k == "VLMJUDGE_MODEL" and not v)}
    with serve_app(APP, env) as url:
        shown = score_in_browser(url, chromium_path, {"reference": str(reference), "generated": str(generated)})
    (expected,) = scorer.score([Image.open(reference)], [Image.open(generated)])
    want = (max(expected["clip"], 0) + max(expected["dino"], 0)) / 2
    assert shown["score"] == f"{want:.2f}"
    assert f"{expected['clip']:.2f} %" in shown["details"] and "DINOv2" in shown["details"]
