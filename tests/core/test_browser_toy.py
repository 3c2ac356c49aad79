"""The shared browser harness, proven on a toy method's app."""
import os
from pathlib import Path

from PIL import Image

from browser import score_in_browser, serve_app

HERE = Path(__file__).resolve().parent

TOY_APP = '''
from vlmjudge.demo import app_from_env
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
    env = {"VLMJUDGE_MODEL": str(answers), "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
           "VLMJUDGE_BACKEND": "replay", "VLMJUDGE_KEY_FIELDS": "item_id"}
    with serve_app(app, env) as url:
        shown = score_in_browser(url, chromium_path, {"image": str(image)})
    assert shown["score"] == "0.900"
    assert "P(Yes)" in shown["details"]
