import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from vlmjudge import load_judge
from vlmjudge.testing.processes import free_port
from vlmjudge.cli import main as cli_main
from vlmjudge.hub.app import build_app, make_scorer_fn
from vlmjudge.hub.spaces import push_space

import toy_method

TOY_METRIC = '''
"""A toy metric for the installer test."""
import datasets
import evaluate


class ToyMetric(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(description="toy", citation="", inputs_description="",
                                   features=datasets.Features({"predictions": datasets.Value("int32"),
                                                               "references": datasets.Value("int32")}))

    def _compute(self, predictions, references):
        return {"matches": sum(int(p == r) for p, r in zip(predictions, references))}
'''


def test_scorer_fn_renders_the_record():
    judge = load_judge({0: {"probs": {"Yes": 3, "No": 1}}}, backend="replay", key_fields=("item_id",))
    fn = make_scorer_fn(toy_method.SPEC, toy_method.SPEC.build(judge))
    score_text, markdown, image = fn(Image.new("RGB", (8, 8)))
    assert score_text == "0.750" and "P(Yes)" in markdown and image is None
    with pytest.raises(ValueError, match="image"):
        fn(None)


def test_build_app_serves_a_page_on_loopback():
    judge = load_judge({0: "Yes"}, backend="replay", key_fields=("item_id",))
    app = build_app(toy_method.SPEC, judge)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as resp:
            assert resp.status == 200
            assert "toyphoto" in resp.read().decode()
    finally:
        app.close()


def test_evaluate_modules_install_makes_bare_name_load_work(tmp_path):
    metrics = tmp_path / "metrics" / "toymetric"
    metrics.mkdir(parents=True)
    (metrics / "toymetric.py").write_text(TOY_METRIC)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": ""}
    env.pop("HF_MODULES_CACHE")
    subprocess.run([sys.executable, "-m", "vlmjudge.cli", "evaluate-modules", "install", "--metrics-dir",
                    str(tmp_path / "metrics")], env=env, check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = "import evaluate; print(evaluate.load('toymetric').compute(predictions=[1, 2, 3], references=[1, 0, 3]))"
    out = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "{'matches': 2}" in out.stdout


class StubHfApi:
    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id, kw.get("repo_type"), kw.get("space_sdk")))

    def upload_file(self, path_or_fileobj, path_in_repo, repo_id, repo_type):
        assert Path(path_or_fileobj).is_file()
        self.calls.append(("upload", path_in_repo, repo_id, repo_type))


CARD = "---\ntitle: Toy\nsdk: gradio\nsdk_version: 6.31.0\napp_file: app.py\n---\n# Toy\n"


def make_space_folder(tmp_path):
    folder = tmp_path / "toymetric"
    folder.mkdir(parents=True)
    for name in ("toymetric.py", "app.py"):
        (folder / name).write_text("x\n")
    (folder / "README.md").write_text(CARD)
    (folder / "requirements.txt").write_text("vlmjudge[demo]>=0.1\nevaluate>=0.4\ngradio>=5\n")
    return folder


def make_wheel(tmp_path):
    wheel = tmp_path / "vlmjudge-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"not a real wheel: staging only copies it")
    return wheel


def test_space_push_uploads_the_staged_folder(tmp_path):
    api = StubHfApi()
    uploaded = push_space(make_space_folder(tmp_path), "org/toy-space", api=api, wheel=make_wheel(tmp_path))
    assert uploaded == ["toymetric.py", "README.md", "app.py", "vlmjudge-0.1.0-py3-none-any.whl", "requirements.txt"]
    assert api.calls[0] == ("create_repo", "org/toy-space", "space", "gradio")
    assert [c[1] for c in api.calls[1:]] == uploaded
    assert {c[3] for c in api.calls[1:]} == {"space"}


def test_staged_requirements_install_the_wheel_and_pin_the_cards_gradio(tmp_path):
    from vlmjudge.hub.spaces import stage_space
    folder = make_space_folder(tmp_path)
    (folder / "examples").mkdir()
    (folder / "examples" / "one.png").write_bytes(b"png")
    staged = stage_space(folder, tmp_path / "stage", wheel=make_wheel(tmp_path))
    assert (tmp_path / "stage" / "examples" / "one.png").read_bytes() == b"png"  # the bundled examples travel
    lines = (tmp_path / "stage" / "requirements.txt").read_text().splitlines()
    assert lines == ["./vlmjudge-0.1.0-py3-none-any.whl[demo]", "gradio==6.31.0", "evaluate>=0.4"]
    assert {p.name for p in staged} >= {"app.py", "README.md", "vlmjudge-0.1.0-py3-none-any.whl"}


def test_space_push_refuses_incomplete_folder_bad_repo_and_a_non_wheel(tmp_path):
    folder = make_space_folder(tmp_path)
    (folder / "app.py").unlink()
    with pytest.raises(FileNotFoundError, match="app.py"):
        push_space(folder, "org/x", api=StubHfApi(), wheel=make_wheel(tmp_path))
    with pytest.raises(ValueError, match="ORG/NAME"):
        push_space(make_space_folder(tmp_path / "b"), "noslash", api=StubHfApi())
    with pytest.raises(FileNotFoundError, match="vlmjudge-\\*.whl"):
        push_space(make_space_folder(tmp_path / "c"), "org/x", api=StubHfApi(), wheel=tmp_path / "c" / "toymetric" / "app.py")


def test_space_push_cli_uses_hfapi(tmp_path, monkeypatch):
    import huggingface_hub
    api = StubHfApi()
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: api)
    assert cli_main(["space", "push", str(make_space_folder(tmp_path)), "--repo", "org/toy",
                     "--wheel", str(make_wheel(tmp_path))]) == 0
    assert len(api.calls) == 6


def test_cli_help_lists_core_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for word in ("info", "evaluate-modules", "space"):
        assert word in out


def test_judge_flags_build_a_keyed_replay_judge(tmp_path):
    import argparse

    from vlmjudge.cli.flags import add_judge_flags, judge_from_args
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"meta": {"item_id": 0}, "text": "Yes"}\n')
    parser = argparse.ArgumentParser()
    add_judge_flags(parser)
    args = parser.parse_args(["--model", str(answers), "--backend", "replay", "--key-fields", "item_id",
                              "--batch-size", "3"])
    judge = judge_from_args(args)
    assert judge.key_fields == ("item_id",) and judge.batch_size == 3
