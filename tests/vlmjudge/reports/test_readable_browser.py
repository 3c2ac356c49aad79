"""Each method's report.html read at 1280 px in headless chromium, over a run with long judge text,
long file names and real images: the page never scrolls sideways, every listed item shows a
thumbnail that loaded and its file name, and the judge model is the one the manifest names."""
import pytest
from browser import looks_blank
from readable_inputs import MODEL, NEGATIVE_DINO, READABLE, UNBROKEN

from vlmjudge.cli import main

#: The viewport width a reader's browser has.
WIDTH = 1280


def _report(method, tmp_path):
    """Build the method's hard-to-read run and write its report; returns (report.html, file names)."""
    build, _ = READABLE[method]
    source, names = build(tmp_path)
    out = tmp_path / "report"
    assert main([method, "report", str(source), "--out", str(out)]) == 0
    return out / "report.html", names


def _shown_items(page, selector):
    """Per listed item: its file names and whether each of its thumbnails loaded."""
    return page.locator(selector).evaluate_all(
        """rows => rows.map(row => ({
            names: [...row.querySelectorAll('.thumb .filename')].map(e => e.innerText),
            loaded: [...row.querySelectorAll('.thumb img')].map(i => i.complete && i.naturalWidth > 0)}))""")


@pytest.mark.parametrize("method", sorted(READABLE))
def test_report_has_thumbnails_file_names_and_no_sideways_scroll(method, tmp_path, browser_page):
    html, names = _report(method, tmp_path)
    page = browser_page
    page.goto(html.as_uri())
    shot = page.screenshot(path=str(tmp_path / f"{method}.png"), full_page=True)
    assert not looks_blank(shot)
    assert page.evaluate("window.innerWidth") == WIDTH
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    items = _shown_items(page, READABLE[method][1])
    assert len(items) == len(names)
    sides = 2 if method == "regeneration" else 1  # a pair shows its reference and its regeneration
    for item in items:
        assert len(item["loaded"]) == sides and all(item["loaded"]), item
        assert len(item["names"]) == sides and item["names"][-1].split(": ")[-1] in names, item
    assert {item["names"][-1].split(": ")[-1] for item in items} == set(names)
    assert MODEL in page.locator("body").inner_text()


@pytest.mark.parametrize("method", ["terravis", "viescore2", "fager"])
def test_a_long_answer_shows_its_start_and_all_of_it_on_a_click(method, tmp_path, browser_page):
    html, _ = _report(method, tmp_path)
    page = browser_page
    page.goto(html.as_uri())
    more = page.locator("details.more").first
    assert len(more.inner_text()) < 400  # the start and the toggle, not 2,000 characters
    more.locator("summary").click()
    assert UNBROKEN in more.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH


def test_terravis_names_no_t2i_model_after_the_input_folder(tmp_path, browser_page):
    html, _ = _report("terravis", tmp_path)
    browser_page.goto(html.as_uri())
    ranking = browser_page.locator("table").nth(1).inner_text()  # the T2I models, after the summary
    assert "all images" in ranking and "imgs" not in ranking


def test_regeneration_histogram_says_which_value_lies_outside_0_to_100(tmp_path, browser_page):
    html, _ = _report("regeneration", tmp_path)
    browser_page.goto(html.as_uri())
    caption = browser_page.locator("#figures figcaption").first.inner_text()
    assert "1 value outside [0, 100]" in caption and f"{NEGATIVE_DINO:.3g}" in caption


def test_an_image_that_is_gone_is_named_with_a_note(tmp_path, browser_page):
    build, selector = READABLE["viescore2"]
    source, names = build(tmp_path)
    (tmp_path / "images" / names[0]).unlink()
    out = tmp_path / "report"
    assert main(["viescore2", "report", str(source), "--out", str(out)]) == 0
    browser_page.goto((out / "report.html").as_uri())
    row = browser_page.locator(selector).first  # the lowest score: names[0]
    assert row.locator(".thumb img").count() == 0
    assert row.locator(".thumb").inner_text().split("\n") == ["missing image", names[0]]


#: The characters each line of a wrapped file name may end with: its own boundaries.
BOUNDARIES = "/_-."


def _line_ends(page, selector):
    """Per element matched: the last character of each of its rendered lines but the last."""
    return page.locator(selector).evaluate_all(
        """els => els.map(el => {
            const ends = []; let top = null, last = null, node;
            const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
            while ((node = walk.nextNode())) {
                for (let i = 0; i < node.length; i++) {
                    const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1);
                    const box = range.getClientRects()[0];
                    if (!box) continue;
                    if (top !== null && box.top > top + 2) ends.push(last);
                    top = box.top; last = node.data[i];
                }
            }
            return ends; })""")


def snake_names(n):
    """Long file names whose only boundaries are `_` and `.`, where a browser would not wrap by itself."""
    return [f"sample_{k}_" + "seed_0123456789_" * 6 + f"end{k}.png" for k in range(n)]


@pytest.mark.parametrize("method", ["viescore2", "fager", "regeneration"])
def test_long_file_names_wrap_at_their_own_boundaries_and_show_whole_on_hover(method, tmp_path, browser_page,
                                                                             monkeypatch):
    import readable_inputs

    monkeypatch.setattr(readable_inputs, "long_names", snake_names)
    html, names = _report(method, tmp_path)
    page = browser_page
    page.goto(html.as_uri())
    selector = f"{READABLE[method][1]} .thumb .filename"
    ends = _line_ends(page, selector)
    assert ends and all(ends), ends  # every long name is drawn over several lines
    assert all(end in BOUNDARIES for lines in ends for end in lines), ends
    titles = page.locator(selector).evaluate_all("els => els.map(el => el.title)")
    assert {title for title in titles} == set(names)
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
