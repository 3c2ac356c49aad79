"""The TerraVis Space app in a real browser, against a tiny Qwen3-VL: upload an image, read
the shown score and violation list, and compare them with the Python API's record; the page
carries the card's title, labelled inputs, no image panel (TerraVis has no spatial output),
named API outputs and bundled examples that score."""
import pytest

from browser import api_names, drive_app, looks_blank, serve_app
from tvf_helpers import METRIC_DIR, subprocess_env
from terravis.spec import render
from vlmjudge.hub.app import card_header
from vlmjudge.text import format_score


def test_app_shows_score_eligibility_and_each_violation(tmp_path, tiny_model, pack_file, images, reference,
                                                         chromium_path):
    pytest.importorskip("gradio")
    pytest.importorskip("playwright")
    flagged = {i: r for i, r in reference.items() if r.score is not None and r.n_major + r.n_minor}
    image_id = min(flagged, key=lambda i: (flagged[i].n_major + flagged[i].n_minor, i))  # the cheapest to score
    record = flagged[image_id]
    env = {**subprocess_env(tmp_path), "VLMJUDGE_MODEL": tiny_model, "VLMJUDGE_DEVICE": "cpu",
           "TERRAVIS_PACK": str(pack_file)}
    with serve_app(METRIC_DIR / "app.py", env) as url:
        shown = drive_app(url, chromium_path, {"image": str(images[image_id])}, screenshot=tmp_path / "space.png")
        example = drive_app(url, chromium_path, example=1)  # the floating house
        api = api_names(url)

    title, description = card_header(METRIC_DIR / "README.md")
    assert shown["heading"] == shown["page_title"] == title == "TerraVis" and not shown["title_blank"]
    assert description.startswith("TerraVis scores the world-grounded visual consistency")
    assert shown["labels"] == ["Image to judge"]  # no unexplained id box
    assert shown["overlay_visible"] is False and shown["empty_panels"] == []
    assert not looks_blank((tmp_path / "space.png").read_bytes())
    assert shown["score"] == render(record)["score_text"] == format_score(record.score)
    lines = [line.strip() for line in shown["details"].splitlines() if line.strip()]
    assert "Eligibility: eligible" in lines  # on its own line, not run into the violation count
    assert f"Violations: {record.n_major + record.n_minor} ({record.n_major} major, {record.n_minor} minor)" in lines
    for check in (c for c in record.checks if c.detected):
        (line,) = [ln for ln in lines if ln.startswith(check.name + " (")]
        assert f"({check.level}, {check.severity})" in line
        assert (check.evidence or "no evidence given") in line

    assert example["examples"] and example["empty_panels"] == []
    assert example["score"] == "N/A" or 0.0 <= float(example["score"]) <= 1.0
    assert api == {"/score": ["image", "Score", "Details"]}  # named inputs and outputs, no value_N
