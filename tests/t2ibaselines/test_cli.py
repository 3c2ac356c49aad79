"""`vlmjudge vqascore score` and `vlmjudge tifa score`: one command written once for every baseline.
Records in the shared layout with a manifest, a rerun resuming, and every bad input one line with
exit status 2 (or, for a bad image, listed with status 3); a method without a judge runs too."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from PIL import Image

from baseline_helpers import PROMPTS, one_line, read_records, run_vlmjudge, write_images, write_prompts
from vlmjudge.cli.exits import run_command
from vlmjudge.registry import MethodSpec, register, unregister

from t2ibaselines.cli import configure
from t2ibaselines.tifa.answering import show
from t2ibaselines.tifa.pack import load_pack
from t2ibaselines.tifa.questions import read_qa_file

TIFA_DATA = Path(__file__).resolve().parents[1] / "data" / "tifa"


def replay_file(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def vqascore_args(tmp_path: Path, *extra: str, prompts: str | None = None) -> list[str]:
    """`vqascore score` over three images, replayed answers and (unless `prompts`) their prompts file."""
    images = write_images(tmp_path / "imgs")
    answers = replay_file(tmp_path / "answers.jsonl", [
        {"meta": {"item_id": f"{stem}.png"}, "probs": {"Yes": 0.25 * (k + 1), "No": 0.125}}
        for k, stem in enumerate(PROMPTS)])
    prompts = prompts or str(write_prompts(tmp_path / "prompts.jsonl"))
    return ["vqascore", "score", str(images), "--prompts", prompts,
            "--backend", "replay", "--model", str(answers), "--key-fields", "item_id",
            "--out", str(tmp_path / "run" / "vq.jsonl"), "--quiet", *extra]


def test_vqascore_score_writes_records_and_manifest_and_a_rerun_resumes(tmp_path):
    code, out, err = run_vlmjudge(vqascore_args(tmp_path))
    assert code == 0, err
    records = read_records(tmp_path / "run" / "vq.jsonl")
    assert {k: r["score"] for k, r in records.items()} == {"red.png": 0.25, "navy.png": 0.5, "olive.png": 0.75}
    assert all(list(r)[:3] == ["id", "status", "score"] and r["meta"]["path"].endswith(k) for k, r in records.items())
    manifest = json.loads((tmp_path / "run" / "vq.manifest.json").read_text())
    assert manifest["method"] == "vqascore" and manifest["backend"] == "replay" and manifest["n_images"] == 3
    assert (tmp_path / "run" / "vq.cache.sqlite").is_file() and "mean 0.5000" in out
    code, out, err = run_vlmjudge(vqascore_args(tmp_path))
    assert code == 0 and "resuming: 3 of 3 done" in err and "model calls: 0" in out


def test_tifa_score_reads_the_released_qa_file_through_a_method_option(tmp_path):
    found = read_qa_file(TIFA_DATA / "sample_question_answers.json")
    images = tmp_path / "imgs"
    images.mkdir()
    rows, prompts = [], []
    for colour, (text_id, (caption, questions)) in zip(("gray", "green"), found.items()):
        Image.new("RGB", (48, 48), colour).save(images / f"{text_id}.png")
        prompts.append({"id": text_id, "prompt": caption, "category": "coco" if "coco" in text_id else "drawbench"})
        for q in questions:  # the judge picks the expected answer, except on counting questions
            shown = show(load_pack(), q)
            pick = q.answer if q.element_type != "counting" else next(c for c in q.choices if c != q.answer)
            rows.append({"meta": {"stage": "tifa", "item_id": f"{text_id}.png", "question": q.question},
                         "text": shown.letters[shown.choices.index(pick)]})
    (tmp_path / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts))
    code, out, err = run_vlmjudge([
        "tifa", "score", str(images), "--prompts", str(tmp_path / "prompts.jsonl"),
        "--method-option", f"qa={TIFA_DATA / 'sample_question_answers.json'}", "--method-option", "generate=false",
        "--backend", "replay", "--model", str(replay_file(tmp_path / "a.jsonl", rows)),
        "--key-fields", "stage,item_id,question", "--out", str(tmp_path / "tifa.jsonl"), "--quiet"])
    assert code == 0, err
    records = read_records(tmp_path / "tifa.jsonl")
    assert records["coco_301091.png"]["score"] == 1.0 and records["drawbench_52.png"]["score"] == 5 / 8
    assert records["drawbench_52.png"]["accuracy_by_type"]["counting"] == 0.0
    assert records["drawbench_52.png"]["meta"]["category"] == "drawbench"
    manifest = json.loads((tmp_path / "tifa.manifest.json").read_text())
    assert manifest["config"] == {"qa": str(TIFA_DATA / "sample_question_answers.json"), "generate": False}
    assert manifest["qa_sha256"] and manifest["generate"] is False


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("change, message", [
    (lambda t: ("prompts", str(t / "nope.jsonl")), "no such file"),
    (lambda t: ("prompts", str(t / "imgs")), "is a folder"),
    (lambda t: ("prompts", write(t / "e.jsonl", "\n")), "the file is empty"),
    (lambda t: ("prompts", write(t / "n.jsonl", '{"id": "red", "prompt": NaN}\n')), "NaN is not a number"),
    (lambda t: ("prompts", write(t / "d.jsonl", '{"id": "red", "prompt": "a"}\n{"id": "red", "prompt": "b"}\n')),
     "ids repeated: ['red']"),
    (lambda t: ("prompts", write(t / "m.jsonl", '{"id": "red", "prompt": "a red square"}\n')),
     "no prompt for 2 image(s)"),
    (lambda t: ("prompts", write(t / "r.jsonl", '{"id": "red.png", "status": "scored", "score": 0.5}\n')),
     "missing prompt"),
    (lambda t: ("prompts", write(t / "w.jsonl", '{"id": "red", "prompt": 7}\n')), "prompt must be a non-empty string"),
    (lambda t: ("prompts", write(t / "p.tsv", "red\ta red square\n")), "a prompts file is .jsonl or .csv"),
    (lambda t: ("prompts", write(t / "l.txt", "a red square\n")), "1 prompt lines for 3 images"),
    (lambda t: ("option", "packs=x"), "vqascore takes pack"),
    (lambda t: ("option", "pack"), "write KEY=VALUE"),
    (lambda t: ("option", "pack=Infinity"), "Infinity is not a value an option takes"),
    (lambda t: ("option", "pack=no-such-pack"), "no shipped VQAScore pack 'no-such-pack'"),
    (lambda t: ("option", "pack=" + write(t / "bad.json", '{"question": "Is it?"}')), "placeholder"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path, change, message):
    (tmp_path / "imgs").mkdir()
    kind, value = change(tmp_path)
    argv = vqascore_args(tmp_path, prompts=value) if kind == "prompts" else vqascore_args(tmp_path, "--method-option", value)
    code, out, err = run_vlmjudge(argv)
    assert code == 2, (out, err)
    assert message in one_line(err)
    assert not (tmp_path / "run" / "vq.jsonl").exists()


@pytest.mark.parametrize("option, message", [
    (lambda t: f"qa={t}", "is a folder; give the QA file itself"),
    (lambda t: f"qa={t / 'missing.json'}", "no such QA file"),
    (lambda t: "qa=" + write(t / "qa.csv", "index,prompt\n0,a dog\n"), "not valid JSON"),
    (lambda t: "generate=\"yes\"", "generate must be true or false"),
])
def test_tifa_refuses_a_bad_option_in_one_line(tmp_path, option, message):
    images = write_images(tmp_path / "imgs")
    code, _, err = run_vlmjudge(["tifa", "score", str(images), "--prompts", str(write_prompts(tmp_path / "p.jsonl")),
                                 "--method-option", option(tmp_path), "--backend", "replay",
                                 "--model", str(replay_file(tmp_path / "a.jsonl", [{"hash": "x", "text": "A"}])),
                                 "--out", str(tmp_path / "t.jsonl"), "--quiet"])
    assert code == 2 and message in one_line(err)


def test_a_bad_image_is_listed_and_the_rest_are_scored(tmp_path):
    argv = vqascore_args(tmp_path)
    (tmp_path / "imgs" / "red.png").write_bytes(b"not a png")
    code, out, err = run_vlmjudge(argv)
    assert code == 3 and "red.png" in err and "scored 2" in out
    assert sorted(read_records(tmp_path / "run" / "vq.jsonl")) == ["navy.png", "olive.png"]


class Brightness:
    """A scorer without a judge (as the trained scorers are): mean brightness over 255, times `scale`,
    or (with a reference) one minus the mean absolute difference."""

    def __init__(self, judge, scale=1.0):
        assert judge is None
        if not isinstance(scale, (int, float)) or isinstance(scale, bool):
            raise TypeError(f"scale must be a number, got {scale!r}")
        self.scale = scale

    def score_batch(self, batch):
        from types import SimpleNamespace
        import numpy as np

        out = []
        for i, image in enumerate(batch["image"]):
            x = np.asarray(image, dtype=float) / 255
            ref = batch.get("reference")
            value = 1 - float(np.abs(x - np.asarray(ref[i].resize(image.size), dtype=float) / 255).mean()) \
                if ref is not None else float(x.mean()) * self.scale
            out.append(SimpleNamespace(score=value, valid=True, to_json=lambda v=value, k=batch["id"][i]: {
                "id": k, "status": "scored", "score": v}))
        return out


def configured(name: str, argv: list[str]) -> int:
    """`vlmjudge NAME argv` with `t2ibaselines.cli.configure` registered under NAME."""
    parser = argparse.ArgumentParser(prog=f"vlmjudge {name}")
    parser.set_defaults(judge_method=name)
    configure(parser)
    args = parser.parse_args(argv)
    return run_command(lambda: args.func(args), "vlmjudge")


@pytest.mark.parametrize("inputs", [("image",), ("image", "reference")])
def test_a_method_without_a_judge_runs_from_its_spec(tmp_path, inputs, capsys):
    name = "brightness_" + "_".join(inputs)
    register(MethodSpec(name=name, inputs=inputs, optional_inputs=("id",), build=Brightness, score_range=(0.0, 2.0),
                        render=lambda r: {"score_text": "", "markdown": ""}, config={"scale": 1.0}))
    try:
        images = write_images(tmp_path / "imgs")
        argv = ["score", str(images), "--out", str(tmp_path / "b.jsonl")]
        if "reference" in inputs:
            Image.new("RGB", (8, 8), "white").save(tmp_path / "white.png")
            lines = [{"id": stem, "prompt": p, "reference": "white.png"} for stem, p in PROMPTS.items()]
            argv += ["--prompts", write(tmp_path / "p.jsonl", "".join(json.dumps(x) + "\n" for x in lines))]
        assert configured(name, argv + ["--method-option", "scale=2"]) == 0
        records = read_records(tmp_path / "b.jsonl")
        assert records["red.png"]["score"] == pytest.approx(2 / 3 if "reference" not in inputs else 1 / 3, abs=0.01)
        assert not (tmp_path / "b.cache.sqlite").exists()  # no judge, no answer cache
        if "reference" in inputs:
            assert records["red.png"]["meta"]["reference"] == str((tmp_path / "white.png").resolve())
        assert configured(name, argv + ["--method-option", "scale=true"]) == 2
        assert "scale must be a number" in capsys.readouterr().err
    finally:
        unregister(name)


def test_agreement_and_compare_read_a_vqascore_run_with_its_protocol_and_statistics(tmp_path):
    assert run_vlmjudge(vqascore_args(tmp_path))[0] == 0
    run = tmp_path / "run" / "vq.jsonl"
    labels = write(tmp_path / "labels.jsonl", "".join(json.dumps({"id": f"{stem}.png", "human": k + 1}) + "\n"
                                                       for k, stem in enumerate(PROMPTS)))
    code, _, err = run_vlmjudge(["agreement", str(run), labels, "--out", str(tmp_path / "agreement")])
    assert code == 0, err
    result = json.loads((tmp_path / "agreement" / "agreement.json").read_text())
    assert result["method"] == "vqascore" and result["axes"] == {"human": "human alignment rating",
                                                                 "judge": "VQAScore P(Yes)"}
    assert result["runs"][0]["statistics"]["spearman"]["value"] == 1.0
    other = tmp_path / "other"
    other.mkdir()
    assert run_vlmjudge(vqascore_args(other))[0] == 0  # the same images scored again: a second run to compare
    code, out, err = run_vlmjudge(["compare", str(run), str(other / "run" / "vq.jsonl"), "--labels", "a,b",
                                   "--out", str(tmp_path / "comparison")])
    assert code == 0, err
    comparison = json.loads((tmp_path / "comparison" / "comparison.json").read_text())
    assert comparison["method"] == "vqascore" and comparison["statistic"] == "mean_score"
