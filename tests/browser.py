"""Drive a Space app (a metrics/<name>/app.py) in Debian's headless chromium via Playwright.

Playwright cannot download its own browsers here, so it is pointed at /usr/bin/chromium.
The app runs in a subprocess on loopback; the page is driven like a person would:
upload, type, click Score, read what is shown.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

from vlmjudge.testing.processes import free_port, running_server


@contextmanager
def serve_app(app_py: str | os.PathLike, env: dict[str, str] | None = None, timeout_s: float = 180.0,
              python: str = sys.executable):
    """Run `python app.py` (this interpreter, or another venv's) on a free loopback port; yields its URL."""
    port = free_port()
    full_env = {**os.environ, **(env or {}), "GRADIO_SERVER_NAME": "127.0.0.1",
                "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False"}
    log = Path(app_py).with_name(f".app-{port}.log")
    url = f"http://127.0.0.1:{port}/"
    try:
        with running_server([python, str(app_py)], url, log, timeout_s=timeout_s, env=full_env,
                            cwd=str(Path(app_py).parent), poll_s=0.5, stop_s=20):
            yield url
    finally:
        log.unlink(missing_ok=True)


#: The result panels a Space may show, by elem_id; the overlay only where the method draws one.
RESULT_PANELS = ("score", "details", "overlay")


def looks_blank(png: bytes, spread: int = 24) -> bool:
    """Whether a screenshot is (nearly) one flat colour, every channel spanning less than `spread`
    levels: a panel that renders nothing."""
    import io

    from PIL import Image

    extrema = Image.open(io.BytesIO(png)).convert("RGB").getextrema()
    return all(high - low < spread for low, high in extrema)


#: True once the score box has text or the app has raised an error toast.
SCORED_OR_ERROR = ("() => (document.querySelector('#score textarea')?.value || '').length > 0"
                   " || document.querySelector('.toast-body') !== null")


def read_page(page) -> dict[str, object]:
    """What a visitor sees: the page title and heading, each result panel's visible text or image,
    the input labels, and the result panels that are shown but empty."""
    shown = {"page_title": page.title(), "heading": page.locator("#title h1").first.inner_text(),
             "title_blank": looks_blank(page.locator("#title").first.screenshot()),
             "labels": [t.strip() for t in page.locator("[id^=input-] [data-testid=block-info], "
                                                        "[id^=input-] [data-testid=block-label]").all_inner_texts()],
             "examples": page.locator("#examples").count() > 0}
    empty = []
    for panel in RESULT_PANELS:
        box = page.locator(f"#{panel}")
        if box.count() == 0 or not box.first.is_visible():
            shown[f"{panel}_visible"] = False
            continue
        shown[f"{panel}_visible"] = True
        has_image = box.locator("img").count() > 0
        text = box.locator("textarea").input_value() if box.locator("textarea").count() else box.inner_text()
        if (not text.strip() and not has_image) or looks_blank(box.first.screenshot()):
            empty.append(panel)
    shown["empty_panels"] = empty
    return shown


def drive_app(url: str, chromium: str, images: dict[str, str] | None = None, texts: dict[str, str] | None = None,
              example: int | None = None, screenshot: str | os.PathLike | None = None,
              timeout_ms: int = 120_000) -> dict[str, object]:
    """Open the app, fill it (upload images and type texts by column name, or click example row
    `example`), click Score and wait for the score; returns `read_page` plus the score and details
    text (and the overlay's presence), after saving a full-page screenshot when asked."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url, timeout=timeout_ms)
            if example is not None:  # one example row: a table row, or a gallery item for one input
                page.locator("#examples tr.tr-body, #examples .gallery-item").nth(example).click()
                page.locator("[id^=input-] img").first.wait_for(timeout=timeout_ms)
            for column, path in (images or {}).items():
                page.locator(f"#input-{column} input[type=file]").set_input_files(path)
            for column in images or {}:
                page.locator(f"#input-{column} img").first.wait_for(timeout=timeout_ms)
            for column, text in (texts or {}).items():
                page.locator(f"#input-{column} textarea").fill(text)
            page.locator("#score-button").click()
            score_box = page.locator("#score textarea")
            page.wait_for_function(SCORED_OR_ERROR, timeout=timeout_ms)
            if not score_box.input_value():
                raise AssertionError(f"the app showed an error: {page.locator('.toast-body').all_inner_texts()}")
            page.wait_for_timeout(300)  # the other outputs of the same event render in the next frames
            shown = read_page(page)
            shown.update(score=score_box.input_value(), details=page.locator("#details").inner_text(),
                         overlay_shown=str(page.locator("#overlay img").count() > 0))
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
            return shown
        finally:
            browser.close()


def api_names(url: str) -> dict[str, list[str]]:
    """The app's named endpoints -> its parameter names then its return names, as a client sees them."""
    from gradio_client import Client

    info = Client(url, verbose=False).view_api(print_info=False, return_format="dict")
    return {name: [p["parameter_name"] for p in ep["parameters"]] + [r["label"] for r in ep["returns"]]
            for name, ep in info["named_endpoints"].items()}


def score_in_browser(url: str, chromium: str, images: dict[str, str], texts: dict[str, str] | None = None,
                     timeout_ms: int = 120_000) -> dict[str, str]:
    """Upload images and type texts by column name, click Score; returns the shown score and details."""
    shown = drive_app(url, chromium, images, texts, timeout_ms=timeout_ms)
    return {key: shown[key] for key in ("score", "details", "overlay_shown")}
