"""The TerraVis Space app in a real browser, against a tiny Qwen3-VL: upload an image, read
the shown score and violation list, and compare them with the Python API's record."""
import pytest

from browser import score_in_browser, serve_app
from tvf_helpers import METRIC_DIR, subprocess_env
from terravis.spec import render


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
        shown = score_in_browser(url, chromium_path, {"image": str(images[image_id])})

    assert shown["score"] == render(record)["score_text"] == f"{record.score:.3f}"
    details = shown["details"]
    assert "Eligibility: eligible" in details
    assert f"Violations: {record.n_major + record.n_minor} ({record.n_major} major, {record.n_minor} minor)" in details
    lines = [line for line in details.splitlines() if line.strip()]
    for check in (c for c in record.checks if c.detected):
        (line,) = [ln for ln in lines if ln.startswith(check.name + " (")]
        assert f"({check.level}, {check.severity})" in line
        assert (check.evidence or "no evidence given") in line
