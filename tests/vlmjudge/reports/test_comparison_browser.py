"""The comparison page in headless chromium: the leaderboard table and the forest plot are shown,
and the page fits 1280 px without a horizontal scroll (the wide tables scroll inside their box)."""
from browser import looks_blank

from vlmjudge.cli.compare import compare
from vlmjudge.reports.comparison import write_comparison


def _runs():
    """Four FAGER-like runs over 40 prompts with growing means, so the ranks and pairs differ."""
    import numpy as np

    rng = np.random.default_rng(2)
    return [[{"id": f"prompt-{k:03d}", "status": "scored", "score": float(np.clip(rng.normal(40 + 8 * m, 15), 0, 100)),
              "level_scores": {"level_1": float(rng.uniform(0, 100))}} for k in range(40)] for m in range(4)]


def test_leaderboard_and_forest_plot_are_visible_without_horizontal_scroll(browser_page, tmp_path):
    labels = ["model-alpha-with-a-long-name", "model-beta", "model-gamma", "model-delta"]
    result = compare(_runs(), labels=labels, method="fager", n_resamples=400)
    write_comparison(result, tmp_path)
    page = browser_page
    page.goto((tmp_path / "report.html").as_uri())
    shot = page.screenshot(path=str(tmp_path / "comparison.png"), full_page=True)
    assert not looks_blank(shot)
    board = page.locator("#summary table")
    assert board.is_visible() and not looks_blank(board.screenshot())
    assert all(label in board.inner_text() for label in labels)
    forest = page.locator("#pairwise img")
    assert forest.is_visible() and forest.evaluate("img => img.complete && img.naturalWidth > 0")
    assert not looks_blank(forest.screenshot())
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
