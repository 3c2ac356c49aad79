"""The Space app (metrics/viescore2/app.py) in headless chromium: upload, type the prompt, score,
see the explanation and the overlay image."""
import json
from pathlib import Path

from PIL import Image

from browser import score_in_browser, serve_app

APP = Path(__file__).resolve().parents[2] / "metrics" / "viescore2" / "app.py"
ANSWER = "pq: 8/10\nsc: 2/10\nartifact:\nr2: 3,4!\nmisalign:\nr9: 9"


def test_app_shows_score_explanation_and_overlay(tmp_path, chromium_path):
    image = tmp_path / "generated.png"
    Image.new("RGB", (64, 64), (120, 160, 200)).save(image)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"meta": {"prompt": "a lighthouse at dusk"}, "text": ANSWER}) + "\n")
    env = {"VLMJUDGE_MODEL": str(answers), "VLMJUDGE_BACKEND": "replay", "VLMJUDGE_KEY_FIELDS": "prompt",
           "HF_HUB_OFFLINE": "1"}
    with serve_app(APP, env) as url:
        shown = score_in_browser(url, chromium_path, {"image": str(image)}, {"prompt": "a lighthouse at dusk"})
    assert shown["score"] == "4/10"  # sqrt(8 * 2)
    assert "Visual artifacts in 2 cells" in shown["details"] and "Semantic misalignments in 1 cell" in shown["details"]
    assert "geometric mean" in shown["details"]
    assert shown["overlay_shown"] == "True"
