"""The labelling app in Debian's headless chromium, once per method: an annotator starts, labels two
items as a person would (ticks, radios, sliders, grid clicks), reloads the page, starts again and
lands on item 3; the JSONL holds exactly the two labels, painted grid cells included."""
import json
from contextlib import contextmanager
from pathlib import Path

import pytest
from PIL import Image

from browser import free_port
from vlmjudge.hub.annotate import annotation_app

TOTAL = 3  # items per method: after two labels the page must resume at the third


def image(path, colour):
    """Write a flat test image, folders included."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (96, 64), colour).save(path)


def make_items(root, method):
    """Three items laid out as the method's protocol reads them (subfolders for pairs)."""
    for k in range(TOTAL):
        colour = (40 * k, 120, 200 - 40 * k)
        if method in ("terravis", "viescore2"):
            image(root / "set" / f"im{k}.png", colour)
            (root / "set" / f"im{k}.txt").write_text(f"prompt number {k}")
        else:
            for folder in (("A", "B") if method == "fager" else ("reference", "regenerated")):
                image(root / folder / f"p{k}.png", colour)


@contextmanager
def served(method, root, out):
    """The method's app, in this process, on a free loopback port; yields its URL."""
    app = annotation_app(method, root, out)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        app.close()


def start(page, annotator):
    """Type the annotator id and press Start, as a person would."""
    page.locator("#annotator textarea, #annotator input").first.fill(annotator)
    page.locator("#start-button").click()


def wait_progress(page, text):
    """Wait until the progress line reads `text` (an event's outputs arrive asynchronously)."""
    page.locator("#progress", has_text=text).wait_for(timeout=30_000)


def pick(page, elem_id, label):
    """Choose the radio option labelled `label` in a widget."""
    page.locator(f"#{elem_id}").get_by_label(label, exact=True).check()


def click_cell(page, view, row, col, n=16):
    """Click the centre of grid cell (row, col), where the page shows it (the image is letterboxed
    to fit its box), and wait for the repainted image."""
    page.wait_for_function("s => { const i = document.querySelector(s); return i && i.complete && i.naturalWidth > 0; }",
                           arg=f"#{view} img", timeout=30_000)  # a repaint may still be loading its image
    img = page.locator(f"#{view} img").first
    before = img.get_attribute("src")
    box = img.evaluate("""i => { const r = i.getBoundingClientRect();
        return [r.left, r.top, r.width, r.height, i.naturalWidth, i.naturalHeight]; }""")
    left, top, width, height, nat_w, nat_h = box
    scale = min(width / nat_w, height / nat_h, 1)
    x = left + (width - nat_w * scale) / 2 + (col - 0.5) * nat_w * scale / n
    y = top + (height - nat_h * scale) / 2 + (row - 0.5) * nat_h * scale / n
    page.mouse.click(x, y)
    page.wait_for_function("([sel, old]) => document.querySelector(sel)?.getAttribute('src') !== old",
                           arg=[f"#{view} img", before], timeout=30_000)


def label_terravis(page, k):
    """Answer item k on the page; returns the fields the label must then hold."""
    if k == 0:
        page.locator("#field-violations-support_stability input[type=checkbox]").check()
        pick(page, "field-violations-support_stability-level", "major")
        pick(page, "field-rating", "2")
    else:
        page.locator("#field-eligible input[type=checkbox]").uncheck()
    return [{"eligible": True, "rating": 2, "violations": [{"type": "support_stability", "severity": "major"}]},
            {"eligible": False, "rating": None, "violations": None}][k]


def label_viescore2(page, k):
    """Answer item k on the page; returns the fields the label must then hold."""
    for name, value in (("pq", 7 - k), ("sc", 3 + k)):
        number = page.locator(f"#field-{name} input[type=number]")
        number.fill(str(value))
        number.press("Enter")
    cells = [(2, 3), (16, 16)] if k == 0 else [(8, 1)]
    for row, col in cells:
        click_cell(page, "view-image", row, col)
    if k == 1:  # a second click clears a cell again
        click_cell(page, "view-image", 5, 5)
        click_cell(page, "view-image", 5, 5)
    return {"pq": 7 - k, "sc": 3 + k, "grid": sorted([list(c) for c in cells])}


def label_fager(page, k):
    """Answer item k on the page; returns the fields the label must then hold."""
    pick(page, "field-choice", ["Image A", "Image B"][k])
    return {"choice": "AB"[k]}


def label_regeneration(page, k):
    """Answer item k on the page; returns the fields the label must then hold."""
    pick(page, "field-rating", str(4 + k))
    return {"rating": 4 + k}


LABELLERS = {"terravis": label_terravis, "viescore2": label_viescore2, "fager": label_fager,
             "regeneration": label_regeneration}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("method", sorted(LABELLERS))
def test_two_labels_then_reload_resumes_at_item_three(tmp_path, method, chromium_path):
    pytest.importorskip("gradio")
    sync_api = pytest.importorskip("playwright.sync_api")
    root, out = tmp_path / "images", tmp_path / "labels.jsonl"
    make_items(root, method)
    expected = []
    with served(method, root, out) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(url, timeout=60_000)
            start(page, "ann-1")
            for k in range(2):
                wait_progress(page, f"item {k + 1} of {TOTAL}")
                expected.append(LABELLERS[method](page, k))
                page.locator("#submit-button").click()
            wait_progress(page, f"item 3 of {TOTAL}")
            page.reload()
            start(page, "ann-1")
            wait_progress(page, f"item 3 of {TOTAL}")
            if method in ("terravis", "viescore2"):
                assert page.locator("#prompt").inner_text().strip() == "Prompt: prompt number 2"
            page.screenshot(path=str(tmp_path / f"{method}.png"), full_page=True)
        finally:
            browser.close()

    labels = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(labels) == 2
    first_view = {"terravis": "set/im", "viescore2": "set/im", "fager": "A/p", "regeneration": "reference/p"}[method]
    assert [label["id"] for label in labels] == [f"{first_view}{k}.png" for k in range(2)]
    assert {label["annotator"] for label in labels} == {"ann-1"} and {label["method"] for label in labels} == {method}
    for label, fields in zip(labels, expected):
        assert {key: label[key] for key in fields} == fields


@pytest.mark.timeout(120)
def test_the_space_file_serves_the_same_app(tmp_path, chromium_path):
    pytest.importorskip("gradio")
    sync_api = pytest.importorskip("playwright.sync_api")
    from browser import serve_app

    make_items(tmp_path / "images", "regeneration")
    space_file = Path(__file__).resolve().parents[3] / "metrics" / "regeneration" / "annotate.py"
    env = {"VLMJUDGE_ANNOTATE_IMAGES": str(tmp_path / "images"), "VLMJUDGE_ANNOTATE_OUT": str(tmp_path / "l.jsonl")}
    with serve_app(space_file, env, timeout_s=90) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(url, timeout=60_000)
            start(page, "space-user")
            wait_progress(page, f"item 1 of {TOTAL}")
            assert page.locator("#view-reference img").count() == page.locator("#view-regenerated img").count() == 1
            pick(page, "field-rating", "1")
            page.locator("#submit-button").click()
            wait_progress(page, f"item 2 of {TOTAL}")
        finally:
            browser.close()
    (label,) = [json.loads(line) for line in (tmp_path / "l.jsonl").read_text().splitlines()]
    assert label["rating"] == 1 and label["images"] == {"reference": "reference/p0.png",
                                                            "regenerated": "regenerated/p0.png"}


@pytest.mark.timeout(120)
def test_a_stale_tab_is_told_and_moved_on_without_a_second_label(tmp_path, chromium_path):
    """Two tabs of one annotator on item 1: the first Submit is kept; the second tab's Submit writes
    nothing, says the item was labelled already, and shows item 2."""
    pytest.importorskip("gradio")
    sync_api = pytest.importorskip("playwright.sync_api")
    root, out = tmp_path / "images", tmp_path / "labels.jsonl"
    make_items(root, "fager")
    with served("fager", root, out) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=["--no-sandbox"])
        try:
            tabs = [browser.new_page(viewport={"width": 1280, "height": 1000}) for _ in range(2)]
            for tab in tabs:
                tab.goto(url, timeout=60_000)
                start(tab, "ann-1")
                wait_progress(tab, f"item 1 of {TOTAL}")
            for tab, choice in zip(tabs, ("Image A", "Image B")):
                pick(tab, "field-choice", choice)
                tab.locator("#submit-button").click()
                wait_progress(tab, f"item 2 of {TOTAL}")
            assert "A/p0.png was already labelled by ann-1" in tabs[1].locator("#progress").inner_text()
            assert "not saved" in tabs[1].locator(".toast-body").first.inner_text()
        finally:
            browser.close()
    labels = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(label["id"], label["choice"]) for label in labels] == [("A/p0.png", "A")]


@pytest.mark.timeout(120)
def test_a_missing_severity_is_one_message_not_an_error_badge_on_every_widget(tmp_path, chromium_path):
    """A violation ticked without its severity: one sentence under Submit says what to choose, no
    widget wears an "Error" badge, nothing is saved and the answers given stay; choosing the
    severity then saves the label and clears the message."""
    pytest.importorskip("gradio")
    sync_api = pytest.importorskip("playwright.sync_api")
    root, out = tmp_path / "images", tmp_path / "labels.jsonl"
    make_items(root, "terravis")
    with served("terravis", root, out) as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(url, timeout=60_000)
            start(page, "ann-1")
            wait_progress(page, f"item 1 of {TOTAL}")
            page.locator("#field-violations-support_stability input[type=checkbox]").check()
            pick(page, "field-rating", "2")
            page.locator("#submit-button").click()
            page.locator("#message", has_text="choose minor or major for").wait_for(timeout=30_000)
            page.wait_for_timeout(500)  # any badge or toast of the same event would be drawn by now
            assert page.get_by_text("Error", exact=True).count() == 0
            assert page.locator(".toast-body").count() == 0
            assert f"item 1 of {TOTAL}" in page.locator("#progress").inner_text()
            assert page.locator("#field-violations-support_stability input[type=checkbox]").is_checked()
            pick(page, "field-violations-support_stability-level", "minor")
            page.locator("#submit-button").click()
            wait_progress(page, f"item 2 of {TOTAL}")
            assert page.locator("#message").inner_text().strip() == ""
        finally:
            browser.close()
    (label,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert label["violations"] == [{"type": "support_stability", "severity": "minor"}] and label["rating"] == 2
