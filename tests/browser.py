"""Drive a Space app (a metrics/<name>/app.py) in Debian's headless chromium via Playwright.

Playwright cannot download its own browsers here, so it is pointed at /usr/bin/chromium.
The app runs in a subprocess on loopback; the page is driven like a person would:
upload, type, click Score, read what is shown.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve_app(app_py: str | os.PathLike, env: dict[str, str] | None = None, timeout_s: float = 180.0,
              python: str = sys.executable):
    """Run `python app.py` (this interpreter, or another venv's) on a free loopback port; yields its URL."""
    port = free_port()
    full_env = {**os.environ, **(env or {}), "GRADIO_SERVER_NAME": "127.0.0.1",
                "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False"}
    log = Path(app_py).with_name(f".app-{port}.log")
    with open(log, "w") as log_fh:
        proc = subprocess.Popen([python, str(app_py)], env=full_env, stdout=log_fh, stderr=subprocess.STDOUT,
                                cwd=str(Path(app_py).parent))
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.time() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"app exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise TimeoutError(f"app did not serve within {timeout_s}s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.unlink(missing_ok=True)


def score_in_browser(url: str, chromium: str, images: dict[str, str], texts: dict[str, str] | None = None,
                     timeout_ms: int = 120_000) -> dict[str, str]:
    """Upload images and type texts by column name, click Score; returns the shown score and details."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(url, timeout=timeout_ms)
            for column, path in images.items():
                page.locator(f"#input-{column} input[type=file]").set_input_files(path)
                page.locator(f"#input-{column} img").first.wait_for(timeout=timeout_ms)
            for column, text in (texts or {}).items():
                page.locator(f"#input-{column} textarea").fill(text)
            page.locator("#score-button").click()
            score_box = page.locator("#score textarea")
            page.wait_for_function("el => el.value.length > 0", arg=score_box.element_handle(), timeout=timeout_ms)
            overlay = page.locator("#overlay img")
            return {"score": score_box.input_value(), "details": page.locator("#details").inner_text(),
                    "overlay_shown": str(overlay.count() > 0)}
        finally:
            browser.close()
