"""Errors a user can act on, before any model loads: a --model that is nowhere (offline: at once;
online: one Hub lookup), an unknown or absent --device, a server refusing the API key, and a
folder where a file is expected (or the reverse). Each is one line naming what to give, status 2,
no traceback."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from PIL import Image

from vlmjudge.cli import main as vlmjudge_main
from vlmjudge.cli.exits import EXIT_USAGE

REPO = Path(__file__).resolve().parents[3]


def run_vlmjudge(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = vlmjudge_main(argv)
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    """The single stderr line of a refused run (no traceback, nothing else)."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def images(tmp_path) -> Path:
    folder = tmp_path / "imgs"
    folder.mkdir()
    for k in range(2):
        Image.new("RGB", (64, 64), (60 * k, 90, 120)).save(folder / f"{k}.png")
    return folder


@pytest.mark.parametrize("model_args, named", [(["--model", "tiny-jduge"], "--model tiny-jduge"),
                                               ([], "the default model")])
def test_a_model_that_is_nowhere_fails_offline_in_one_line(tmp_path, images, model_args, named):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("HF_HUB_CACHE", None)
    # no wall-clock bound (speed lives in bench/): the timeout only turns a hang into a failure
    done = subprocess.run([sys.executable, "-m", "vlmjudge.cli", "terravis", "score", str(images), *model_args,
                           "--out", str(tmp_path / "r.jsonl")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_USAGE, done.stderr
    line = one_line(done.stderr)
    assert named in line and "not in the Hugging Face cache" in line and "HF_HUB_OFFLINE is set" in line
    assert "python -m vlmjudge.testing demo DIR" in line
    assert not (tmp_path / "r.jsonl").exists()


def score_online(tmp_path, images, monkeypatch, model_info):
    """`terravis score` on a misspelt model name, online with an empty Hub cache, the Hub's
    `model_info` replaced by `model_info`: (exit status, stdout, stderr)."""
    import huggingface_hub
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(huggingface_hub, "model_info", model_info)
    return run_vlmjudge(["terravis", "score", str(images), "--model", "tiny-jduge", "--out", str(tmp_path / "r.jsonl")])


def test_online_with_the_hub_unreachable_the_model_is_looked_up_once(tmp_path, images, monkeypatch):
    asked = []

    def unreachable(model_id, revision=None, timeout=None):
        asked.append(model_id)
        raise ConnectionError("name or service not known")

    code, _, err = score_online(tmp_path, images, monkeypatch, unreachable)
    assert code == EXIT_USAGE
    assert "--model tiny-jduge" in one_line(err) and "Hub lookup failed" in err
    assert asked == ["tiny-jduge"]  # one try, before the images are decoded and before anything loads


def test_online_a_name_the_hub_does_not_know_says_so(tmp_path, images, monkeypatch):
    from huggingface_hub.errors import RepositoryNotFoundError

    def not_found(model_id, revision=None, timeout=None):
        raise RepositoryNotFoundError.__new__(RepositoryNotFoundError)  # as the Hub's 404 raises it

    code, _, err = score_online(tmp_path, images, monkeypatch, not_found)
    assert code == EXIT_USAGE
    assert "--model tiny-jduge" in one_line(err) and "no model of that name on the Hub" in err


def test_an_unknown_device_lists_the_valid_names_before_the_model_loads(tmp_path, images):
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()  # a folder: the device is refused before anything looks inside it
    code, _, err = run_vlmjudge(["terravis", "score", str(images), "--model", str(checkpoint), "--device", "gpu",
                                 "--out", str(tmp_path / "r.jsonl")])
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "--device gpu: not a device name" in line and "cpu, cuda, cuda:N, mps" in line


def test_cuda_without_a_gpu_says_so(tmp_path, images):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    code, _, err = run_vlmjudge(["terravis", "score", str(images), "--model", str(checkpoint), "--device", "cuda",
                                 "--out", str(tmp_path / "r.jsonl")])
    assert code == EXIT_USAGE
    assert "--device cuda: no CUDA device is available on this machine; use --device cpu" in one_line(err)


class _Refusing(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that refuses every key."""

    status = 401

    def do_POST(self):  # noqa: N802 - http.server's name
        body = b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}'
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        """Quiet: the test reads the CLI's stderr."""


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_api_key_names_the_variable_it_was_read_from(tmp_path, images, monkeypatch, status):
    pytest.importorskip("openai")
    handler = type("Refusing", (_Refusing,), {"status": status})
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    try:
        code, _, err = run_vlmjudge(["terravis", "score", str(images), "--model", "judge", "--quiet",
                                     "--base-url", f"http://127.0.0.1:{server.server_port}/v1",
                                     "--out", str(tmp_path / "r.jsonl")])
    finally:
        server.shutdown()
    assert code == EXIT_USAGE
    line = one_line(err)
    assert f"refused the request (HTTP {status})" in line and "set OPENAI_API_KEY to a key it accepts" in line
    assert "sk-wrong" not in line


def test_fager_score_on_a_folder_shows_the_csv_it_takes(images):
    code, _, err = run_vlmjudge(["fager", "score", str(images), "--model", "m", "--backend", "replay"])
    assert code == EXIT_USAGE
    line = one_line(err)
    assert f"{images} is a folder" in line and "a CSV file with the columns index, prompt, image" in line


def test_fager_score_out_a_folder_names_the_records_file(tmp_path, images):
    items = tmp_path / "items.csv"
    items.write_text("index,prompt,image\n0,a cat,imgs/0.png\n")
    code, _, err = run_vlmjudge(["fager", "score", str(items), "--model", "m", "--backend", "replay",
                                 "--out", str(tmp_path / "run")])
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "--out takes the records file" in line and str(tmp_path / "run" / "details.jsonl") in line


def test_a_csv_where_images_are_expected_says_what_the_command_takes(tmp_path):
    items = tmp_path / "items.csv"
    items.write_text("index,prompt,image\n0,a cat,cat.png\n")
    code, _, err = run_vlmjudge(["terravis", "score", str(items), "--model", "m", "--backend", "replay",
                                 "--out", str(tmp_path / "r.jsonl")])
    assert code == EXIT_USAGE
    assert "is a CSV file, not an image" in one_line(err) and ".png" in err


def test_compare_on_a_file_says_it_takes_folders(tmp_path, images):
    listing = tmp_path / "refs.csv"
    listing.write_text("id\n0\n")
    code, _, err = run_vlmjudge(["regeneration", "compare", str(listing), str(images)])
    assert code == EXIT_USAGE
    assert "compare takes two folders of images" in one_line(err)


def test_terravis_report_on_a_folder_names_the_records_files(tmp_path):
    runs = tmp_path / "mist"
    runs.mkdir()
    (runs / "results.jsonl").write_text("")
    code, _, err = run_vlmjudge(["terravis", "report", str(runs), "--out", str(tmp_path / "rep")])
    assert code == EXIT_USAGE
    line = one_line(err)
    assert f"{runs} is a folder" in line and "results JSONL" in line and "results.jsonl" in line
