"""`fager refine --steps --height --width` on tiny random diffusers pipelines: the settings reach
the pipeline call (the image written has the size asked for), an editor gets --steps, and a
size that is no positive whole number is a usage error."""
from __future__ import annotations

import json
import time

import pytest
from PIL import Image

from fager.qa_store import format_qa_csv
from fager.schema import QAItem, QASet
from vlmjudge.cli import main

from fagent_helpers import noise

pytest.importorskip("diffusers")


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory):
    """(text-to-image folder, image-edit folder) of tiny random pipelines."""
    from vlmjudge.testing.tiny_diffusers import build_tiny_image_edit, build_tiny_text_to_image
    root = tmp_path_factory.mktemp("refine-cli-diffusers")
    return build_tiny_text_to_image(root / "t2i"), build_tiny_image_edit(root / "edit")


def refine_inputs(tmp_path, feedback):
    """One item whose only level-1 question is answered "no" (its decision: regenerate), with
    `feedback` as the feedback agent's answer; the argv of `fager refine` on it up to the tools."""
    noise(0, (32, 32)).save(tmp_path / "kite.png")
    (tmp_path / "items.csv").write_text("index,prompt,image\nkite,a green kite,kite.png\n")
    qa = QASet(index="kite", prompt="a green kite", items=[
        QAItem(level="level_1", category="existence", importance="high", question="Is a kite shown?",
               source_fact="A kite is shown")])
    (tmp_path / "QA.csv").write_text(format_qa_csv([qa]))
    rows = [{"meta": {"item_id": "kite", "question_id": 0}, "text": json.dumps({"answer": "no", "rationale": "x"})},
            {"meta": {"item_id": "kite", "question_id": "feedback"}, "text": json.dumps(feedback)}]
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return ["fager", "refine", str(tmp_path / "items.csv"), "--qa", str(tmp_path / "QA.csv"), "--backend", "replay",
            "--model", str(tmp_path / "answers.jsonl"), "--key-fields", "item_id,question_id",
            "--out", str(tmp_path / "out")]


def spy_on_calls(monkeypatch, pipeline_class):
    """Record the keyword arguments of every call of `pipeline_class`, which still runs."""
    calls = []
    original = pipeline_class.__call__

    def spy(self, *args, **kwargs):
        calls.append(kwargs)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(pipeline_class, "__call__", spy)
    return calls


def test_steps_and_size_reach_the_text_to_image_pipeline(tmp_path, pipelines, monkeypatch):
    from diffusers import StableDiffusionPipeline
    calls = spy_on_calls(monkeypatch, StableDiffusionPipeline)
    argv = refine_inputs(tmp_path, {"constraint": "one kite in the sky"})
    started = time.monotonic()
    assert main([*argv, "--generator", pipelines[0], "--steps", "1", "--height", "48", "--width", "64"]) == 0
    assert time.monotonic() - started < 60  # one step at 48x64: seconds, not the pipeline's default run
    assert [(c["num_inference_steps"], c["height"], c["width"]) for c in calls] == [(1, 48, 64)]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    (step,) = report["items"][0]["steps"]
    assert (step["action"], step["status"]) == ("regenerate", "done")
    assert Image.open(tmp_path / "out" / step["image_file"]).size == (64, 48)  # PIL: (width, height)


def test_an_editor_gets_steps_and_keeps_its_input_size(tmp_path, pipelines, monkeypatch):
    from diffusers import StableDiffusionInstructPix2PixPipeline
    calls = spy_on_calls(monkeypatch, StableDiffusionInstructPix2PixPipeline)
    argv = refine_inputs(tmp_path, {"instruction": "show the kite"})
    argv += ["--regenerate-threshold", "0", "--exclusive"]  # a level-1 score of 0 now asks for an edit
    assert main([*argv, "--editor", pipelines[1], "--steps", "1", "--height", "48", "--width", "64"]) == 0
    assert [c["num_inference_steps"] for c in calls] == [1]
    assert all("height" not in c and "width" not in c for c in calls)
    (step,) = json.loads((tmp_path / "out" / "report.json").read_text())["items"][0]["steps"]
    assert (step["action"], step["status"]) == ("edit", "done")
    assert Image.open(tmp_path / "out" / step["image_file"]).size == (32, 32)


@pytest.mark.parametrize("flag,value", [("--steps", "0"), ("--height", "-8"), ("--width", "wide")])
def test_a_size_that_is_no_positive_whole_number_is_a_usage_error(tmp_path, capsys, flag, value):
    with pytest.raises(SystemExit) as exit_info:
        main(["fager", "refine", str(tmp_path / "items.csv"), flag, value])
    assert exit_info.value.code == 2
    assert f"argument {flag}" in capsys.readouterr().err
