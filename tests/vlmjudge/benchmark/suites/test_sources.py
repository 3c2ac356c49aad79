"""Fetching a published file: a real download from a local web server into `datasets`' cache, then
the same file read offline from that cache with the server gone."""
from __future__ import annotations

import functools
import http.server
import threading

import pytest

from vlmjudge.benchmark.suites import SuiteUnavailableError, WebFile
from vlmjudge.benchmark.suites.sources import fetch


@pytest.fixture
def web_folder(tmp_path):
    """A folder served over HTTP on a free local port; yields (folder, base URL, stop)."""
    folder = tmp_path / "site"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()

    yield folder, f"http://127.0.0.1:{server.server_address[1]}", stop
    if thread.is_alive():
        stop()


def _online(monkeypatch) -> None:
    """Online, whatever the environment said when `datasets` was first imported."""
    import datasets.config

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)


def test_a_download_is_cached_and_read_again_offline(web_folder, tmp_path, monkeypatch):
    folder, base, stop = web_folder
    (folder / "PartiPrompts.tsv").write_text("Prompt\tCategory\tChallenge\tNote\nbond\tAbstract\tBasic\t\n")
    _online(monkeypatch)
    file = WebFile(f"{base}/PartiPrompts.tsv")
    first = fetch(file, "partiprompts", tmp_path / "cache")
    assert first.read_text().startswith("Prompt\tCategory") and first.parent == tmp_path / "cache"
    stop()
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert fetch(file, "partiprompts", tmp_path / "cache") == first
    with pytest.raises(SuiteUnavailableError, match="offline and not in the datasets download cache"):
        fetch(WebFile(f"{base}/other.tsv"), "partiprompts", tmp_path / "cache")


def test_a_missing_file_on_the_server_is_one_line(web_folder, tmp_path, monkeypatch):
    _, base, _ = web_folder
    _online(monkeypatch)
    with pytest.raises(SuiteUnavailableError) as caught:
        fetch(WebFile(f"{base}/gone.tsv"), "partiprompts", tmp_path / "cache")
    assert "download failed" in str(caught.value) and "--suite-file" in str(caught.value)
    assert "\n" not in str(caught.value)
