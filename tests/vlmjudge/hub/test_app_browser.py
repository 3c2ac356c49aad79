"""The shared browser harness, proven on a toy method's app: the score, the details panel, the
title, no image panel (the toy draws none) and no empty panel."""
import os
from pathlib import Path

import pytest
from PIL import Image

from browser import drive_app, looks_blank, serve_app

TOY_DIR = Path(__file__).resolve().parents[1]  # tests/vlmjudge, where toy_method lives

TOY_APP = '''
from vlmjudge.hub.app import app_from_env
import toy_method

demo = app_from_env(toy_method.SPEC)
demo.launch()
'''


def test_toy_app_scores_an_uploaded_image(tmp_path, chromium_path):
    app = tmp_path / "app.py"
    app.write_text(TOY_APP)
    image = tmp_path / "photo.png"
    Image.new("RGB", (32, 32), (10, 120, 200)).save(image)
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"meta": {"item_id": 0}, "probs": {"Yes": 0.9, "No": 0.1}}\n')
    env = {"VLMJUDGE_MODEL": str(answers), "PYTHONPATH": os.pathsep.join([str(TOY_DIR), os.environ.get("PYTHONPATH", "")]),
           "VLMJUDGE_BACKEND": "replay", "VLMJUDGE_KEY_FIELDS": "item_id"}
    with serve_app(app, env) as url:
        shown = drive_app(url, chromium_path, {"image": str(image)}, screenshot=tmp_path / "page.png")
        with pytest.raises(AssertionError, match="please provide the image to judge"):
            drive_app(url, chromium_path, timeout_ms=30_000)  # Score with nothing uploaded: said in the page
    assert shown["score"] == "0.900"
    assert "P(Yes)" in shown["details"]
    assert shown["heading"] == shown["page_title"] == "toyphoto" and not shown["title_blank"]
    assert shown["labels"] == ["Image to judge"] and shown["examples"] is False
    assert shown["overlay_visible"] is False and shown["empty_panels"] == []
    assert not looks_blank((tmp_path / "page.png").read_bytes())


def test_looks_blank_tells_a_flat_panel_from_one_with_text(tmp_path):
    from PIL import ImageDraw

    flat, written = Image.new("RGB", (120, 40), (250, 250, 250)), Image.new("RGB", (120, 40), (250, 250, 250))
    ImageDraw.Draw(written).text((5, 10), "0.900", fill=(20, 20, 20))
    for name, picture in (("flat", flat), ("written", written)):
        picture.save(tmp_path / f"{name}.png")
    assert looks_blank((tmp_path / "flat.png").read_bytes())
    assert not looks_blank((tmp_path / "written.png").read_bytes())
