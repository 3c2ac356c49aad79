"""The Space app (metrics/regeneration/app.py) scores two uploaded images in headless chromium; the
page carries the card's title and labelled inputs, has no image panel (the method draws none),
names its API outputs, and its bundled example pair scores as the Python API does."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from vlmjudge.hub.app import card_header
from vlmjudge.text import format_score

from browser import api_names, drive_app, looks_blank, serve_app

APP = Path(__file__).resolve().parents[2] / "metrics" / "regeneration" / "app.py"
EXAMPLES = APP.parent / "examples"


def test_app_scores_uploaded_pair(tmp_path, chromium_path, encoder_dirs, scorer):
    reference, generated = tmp_path / "reference.png", tmp_path / "generated.png"
    Image.fromarray(np.random.RandomState(0).randint(0, 256, (48, 48, 3), dtype=np.uint8)).save(reference)
    Image.fromarray(np.random.RandomState(1).randint(0, 256, (48, 48, 3), dtype=np.uint8)).save(generated)
    env = {"REGENERATION_CLIP_MODEL": encoder_dirs["clip"], "REGENERATION_DINO_MODEL": encoder_dirs["dino"],
           "VLMJUDGE_DEVICE": "cpu", "HF_HUB_OFFLINE": "1", "VLMJUDGE_MODEL": ""}
    env = {k: v for k, v in {**os.environ, **env}.items() if not (k == "VLMJUDGE_MODEL" and not v)}
    with serve_app(APP, env) as url:
        shown = drive_app(url, chromium_path, {"reference": str(reference), "generated": str(generated)},
                          screenshot=tmp_path / "space.png")
        example = drive_app(url, chromium_path, example=0)
        api = api_names(url)
    (expected,) = scorer.score([Image.open(reference)], [Image.open(generated)])
    want = (max(expected["clip"], 0) + max(expected["dino"], 0)) / 2
    assert shown["score"] == format_score(want)
    assert f"{format_score(expected['clip'])} %" in shown["details"] and "DINOv2" in shown["details"]
    assert shown["heading"] == shown["page_title"] == card_header(APP.with_name("README.md"))[0] \
        == "Image Regeneration"
    assert shown["labels"] == ["Reference image", "Regenerated image"]
    assert shown["overlay_visible"] is False and shown["empty_panels"] == [] and not shown["title_blank"]
    assert not looks_blank((tmp_path / "space.png").read_bytes())

    (pair,) = scorer.score([Image.open(EXAMPLES / "lighthouse_reference.png").convert("RGB")],
                           [Image.open(EXAMPLES / "lighthouse_regenerated.png").convert("RGB")])
    assert example["score"] == format_score((max(pair['clip'], 0) + max(pair['dino'], 0)) / 2)
    assert api == {"/score": ["reference", "generated", "Score", "Details"]}


def test_space_without_encoders_offline_stops_with_one_line(tmp_path):
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith(("REGENERATION_", "VLMJUDGE_MODEL"))}
    env.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(tmp_path / "hub"))
    proc = subprocess.run([sys.executable, str(APP)], env=env, capture_output=True, text=True, timeout=300,
                          cwd=str(APP.parent))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("regeneration Space cannot start: clip encoder 'openai/clip-vit-base-patch32'")
    assert "clip_model=" in last and "HF_HUB_OFFLINE" in last
