"""The Space app (metrics/viescore2/app.py) in headless chromium: upload, type the prompt, score,
see the explanation and the overlay image; the scorer is configured from the environment. The page
carries the card's title and labelled inputs, names its API outputs, and its bundled example scores."""
import json
from pathlib import Path

from PIL import Image

from browser import api_names, drive_app, looks_blank, serve_app
from vlmjudge.hub.app import card_header

APP = Path(__file__).resolve().parents[2] / "metrics" / "viescore2" / "app.py"
ANSWER = "pq: 8/10\nsc: 2/10\nartifact:\nr2: 3,4!\nmisalign:\nr9: 9"
#: The bundled example's prompt (metrics/viescore2/app.py) and a clean answer for it.
EXAMPLE_PROMPT = "a red and white striped lighthouse on a rocky shore at dusk"
EXAMPLE_ANSWER = "pq: 9/10\nsc: 4/10\nartifact:\nmisalign:"


def test_app_shows_score_explanation_and_overlay(tmp_path, chromium_path):
    image = tmp_path / "generated.png"
    Image.new("RGB", (64, 64), (120, 160, 200)).save(image)
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"meta": {"prompt": p}, "text": t}) + "\n" for p, t in
                               (("a lighthouse at dusk", ANSWER), (EXAMPLE_PROMPT, EXAMPLE_ANSWER))))
    # a pack with a template for this configuration only: the app starts only if both variables apply
    pack = tmp_path / "pack.json"
    pack.write_text(json.dumps({"version": "ft-1", "templates": {"pq_sc+split+marks": "Evaluate: {prompt}"}}))
    env = {"VLMJUDGE_MODEL": str(answers), "VLMJUDGE_BACKEND": "replay", "VLMJUDGE_KEY_FIELDS": "prompt",
           "HF_HUB_OFFLINE": "1", "VIESCORE2_FIELDS": "pq_sc+split+marks", "VIESCORE2_GRID_SIZE": "8",
           "VIESCORE2_PACK": str(pack)}
    with serve_app(APP, env) as url:
        shown = drive_app(url, chromium_path, {"image": str(image)}, {"prompt": "a lighthouse at dusk"},
                          screenshot=tmp_path / "space.png")
        example = drive_app(url, chromium_path, example=0)
        api = api_names(url)
    assert shown["score"] == "4.000/10"  # sqrt(8 * 2)
    details = shown["details"]
    assert "Visual artifacts in 2 cells" in details and "Most of these cells are marked" in details  # marks kept
    assert "No semantic misalignment is marked" in details  # r9 lies outside the 8 x 8 grid
    assert "geometric mean" in details and "pq_sc+split+marks, 8x8 grid" in details
    assert shown["overlay_shown"] == "True" and shown["overlay_visible"] is True
    assert shown["empty_panels"] == [] and not shown["title_blank"]
    assert shown["heading"] == shown["page_title"] == card_header(APP.with_name("README.md"))[0] == "VIEScore2"
    assert shown["labels"] == ["Generated image", "Prompt", "Conditioning image (optional)"]  # no id box
    assert not looks_blank((tmp_path / "space.png").read_bytes())

    assert example["score"] == "6.000/10" and example["empty_panels"] == []  # sqrt(9 * 4), from the bundled image
    assert api == {"/score": ["image", "prompt", "conditioning", "Score", "Details", "Defect cells (grid overlay)"]}
