"""Reports render any name: a folder or a --t2i-model holding `$`, `\\frac{` and `_` is drawn as
typed in every figure (no mathtext parse error stopping the report) and appears literally on
the page."""
from __future__ import annotations

import html

import pytest
from PIL import Image

from vlmjudge.cli import main
from vlmjudge.reports.figures import bars, histogram

FOLDER = r"a$\frac{$b_c"
T2I_MODEL = r"_m$x\frac{y$_1"
VIOLATIONS = [{"type": "optical_effect", "severity": "minor", "aspect": "the cup", "evidence": "No shadow."},
              {"type": "biological_anatomy", "severity": "major", "aspect": "a hand", "evidence": "Six fingers."}]


def write_run(tmp_path):
    """A terravis score output over images in FOLDER, each record's model field T2I_MODEL."""
    from terravis import save_records, score_annotation

    images = tmp_path / "imgs" / FOLDER
    images.mkdir(parents=True)
    records = []
    for k in range(3):
        path = images / f"{k}.png"
        Image.new("RGB", (64, 64), (40 * k, 120, 200)).save(path)
        records.append(score_annotation({"image_id": f"{FOLDER}/{k}.png", "eligible": True,
                                         "violations": VIOLATIONS[:k],
                                         "meta": {"path": str(path), "model": T2I_MODEL}}))
    out = tmp_path / "results.jsonl"
    save_records(out, records, {"method": "terravis", "variant": "workflow", "model": "judge", "backend": "replay"})
    return out


@pytest.mark.parametrize("group_by, name", [("folder", FOLDER), ("field", T2I_MODEL)])
def test_terravis_report_draws_and_shows_a_name_with_mathtext_in_it(tmp_path, group_by, name):
    results = write_run(tmp_path)
    out = tmp_path / "report"
    assert main(["terravis", "report", str(results), "--out", str(out), "--group-by", group_by]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert name in html.unescape(page)
    assert sorted(p.name for p in out.glob("*.png")), "the figures were drawn"


def test_shared_histogram_and_bars_draw_such_names(tmp_path):
    histogram({FOLDER: [0.2, 0.5], T2I_MODEL: [0.7]}, tmp_path / "h.png", f"score of {T2I_MODEL}", FOLDER)
    bars({FOLDER: 2, T2I_MODEL: 1}, tmp_path / "b.png", "images", f"decisions: {FOLDER}", ylabel=T2I_MODEL)
    assert (tmp_path / "h.png").stat().st_size > 0 and (tmp_path / "b.png").stat().st_size > 0
