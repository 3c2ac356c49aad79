"""The report pages' browser: one headless chromium page at 1280 px, per test module."""
import pytest


@pytest.fixture(scope="module")
def browser_page(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=["--no-sandbox"])
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 900})
        finally:
            browser.close()
