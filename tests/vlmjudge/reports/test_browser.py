"""Each method's report.html in headless chromium, with results and empty: the page and its
summary table are not blank, the title and the summary's numbers are shown, a figure is shown
(or, when nothing was scored, the empty-state message)."""
import json

import pytest
from browser import looks_blank
from report_inputs import METHODS, make_report

from vlmjudge.reports.page import fmt_number


def _summary_numbers(out):
    """The counts and means summary.json holds, as the page formats them (TerraVis: per evaluator)."""
    data = json.loads((out / "summary.json").read_text())
    summary = data["evaluators"][0]["summary"] if "evaluators" in data else data["summary"]
    keys = ("n_images", "n_scored", "n_pairs", "mean_score", "mean_overall", "mean_clip")
    return [fmt_number(summary[k]) for k in keys if k in summary]


@pytest.mark.parametrize("scored", [True, False], ids=["results", "empty"])
@pytest.mark.parametrize("method", sorted(METHODS))
def test_report_in_the_browser(method, scored, tmp_path, browser_page):
    out = make_report(method, tmp_path, scored=scored)
    page = browser_page
    page.goto((out / "report.html").as_uri())
    shot = page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert not looks_blank(shot)
    title = METHODS[method][1]
    assert page.title() == title and page.locator("h1").inner_text() == title
    summary = page.locator("#summary table")
    assert summary.is_visible() and not looks_blank(summary.screenshot())
    shown = summary.inner_text()
    numbers = _summary_numbers(out)
    assert numbers and all(n in shown for n in numbers), (numbers, shown)
    if scored:
        picture = page.locator("#figures img").first
        assert picture.is_visible()
        assert picture.evaluate("img => img.complete && img.naturalWidth > 0")  # the PNG loaded
        assert not looks_blank(picture.screenshot())
        assert page.locator(".lowres").first.is_visible()
    else:
        note = page.locator("#figures .empty")
        assert note.is_visible() and "nothing to plot or rank" in note.inner_text()
        assert page.locator("img").count() == 0
        assert "lowest-scored" in page.locator("body").inner_text()
