"""The benchmark runner (table, grids, progress plots, direct judging) and the CLI commands."""
from __future__ import annotations

import csv
import json

import pytest
from PIL import Image
from regen_helpers import (
    ToyGenerator,
    loop_answers,
    noise_generate,
    reference_images,
    replay,
    run_cli,
    write_answers_jsonl,
)

from regeneration.evaluation.benchmark import (
    load_prompts,
    load_references,
    release_summary,
    run_benchmark,
    summarize,
)
from regeneration.config import parse_weights
from regeneration.config import LoopConfig
from regeneration.records import ItemResult

T, N = 2, 3


def test_summarize_by_hand():
    results = [ItemResult("a", "scored", 85.0, clip=90.0, dino=80.0, mllm={"content_norm": 0.5, "perceptual_norm": None},
                          parse_failures=1),
               ItemResult("b", "scored", 65.0, clip=70.0, dino=60.0, mllm={"content_norm": 1.0, "perceptual_norm": 0.25}),
               ItemResult("c", "failed", parse_failures=2)]
    row = summarize("m", results, direct=[0.5, None])
    assert row == {"model": "m", "items": 3, "scored": 2, "clip": 80.0, "dino": 70.0, "mllm_content": 0.75,
                   "mllm_perceptual": 0.25, "direct_text_image": 0.5, "parse_failures": 3}


def test_release_summary_by_hand():
    """The release's summary of its own records: means over images, ratings read with int()."""
    records = [{"clip_score": 0.5, "dinov2_score": 0.25, "gpt4v_scores": {"aesthetic": 4.5, "semantic": 3, "average": 3.75}},
               {"clip_score": 0.75, "dinov2_score": 0.5, "gpt4v_scores": {"aesthetic": "5", "semantic": 2, "average": 3.5}}]
    assert release_summary(records) == {"total_images": 2, "average_scores": {
        "clip": 0.625, "dinov2": 0.375, "gpt4v_aesthetic": 4.5, "gpt4v_semantic": 2.5, "gpt4v_avg": 3.625}}
    for bad in ([], [{"clip_score": 0.5}], [{**records[0], "gpt4v_scores": {"aesthetic": None, "semantic": 1,
                                                                            "average": 1}}]):
        with pytest.raises(ValueError):
            release_summary(bad)


def test_benchmark_table_grid_plots_and_direct_judging(tmp_path, scorer):
    refs = reference_images(2)
    answers = loop_answers(refs, T, N)
    for item in refs:
        answers[("text_image", item, 0, 0)] = json.dumps({"reason": "r", "score": 4})
    judge = replay(answers)
    prompts = {item: f"original prompt of {item}" for item in refs}
    result = run_benchmark(refs, {"exact": ToyGenerator(refs), "noise": noise_generate}, judge, tmp_path / "bench",
                           similarity=scorer, config=LoopConfig(rounds=T), original_prompts=prompts,
                           direct_judging=True, grid_cell=40)
    with open(result.files["table"], newline="") as fh:
        table = {row["model"]: row for row in csv.DictReader(fh)}
    assert set(table) == {"exact", "noise"}
    assert float(table["exact"]["clip"]) == 100.0 and float(table["exact"]["dino"]) == 100.0
    assert float(table["noise"]["clip"]) < 100.0 and table["exact"]["mllm_content"] == "1.0"
    assert table["noise"]["direct_text_image"] == "0.75"  # rating 4 -> (4-1)/4
    with open(result.files["rounds"], newline="") as fh:
        rounds = list(csv.DictReader(fh))
    assert [(r["model"], r["round"], r["aspect"]) for r in rounds] == [
        ("exact", "1", "overall"), ("exact", "2", "style"), ("noise", "1", "overall"), ("noise", "2", "style")]
    grid = Image.open(result.files["grid"])
    assert grid.size == (96 + 3 * 40, 14 + 2 * (40 + 7))
    assert Image.open(result.files["progress"]).size[0] > 100
    # understanding built once for both models; the direct baseline generated one image per reference
    stages = [r.meta["stage"] for _, r in judge.log]
    assert stages.count("iut_caption") == 2 and stages.count("text_image") == 4
    assert sorted(p.name for p in (tmp_path / "bench" / "models" / "noise" / "direct").glob("*.png")) == [
        "ref0.png", "ref1.png"]
    with pytest.raises(ValueError, match="original prompts"):
        run_benchmark(refs, {"x": noise_generate}, judge, tmp_path / "b2", similarity=scorer, direct_judging=True)


def test_reference_and_prompt_loading(tmp_path):
    (tmp_path / "refs").mkdir()
    Image.new("RGB", (8, 8)).save(tmp_path / "refs" / "a cat.png")
    Image.new("RGB", (8, 8)).save(tmp_path / "refs" / "b.jpg")
    (tmp_path / "refs" / "notes.txt").write_text("ignored")
    assert list(load_references(tmp_path / "refs")) == ["a_cat", "b"]
    (tmp_path / "p.csv").write_text("id,prompt\na cat,a cat on a mat\n")
    assert load_prompts(tmp_path / "p.csv") == {"a_cat": "a cat on a mat"}
    (tmp_path / "p.jsonl").write_text('{"id": "b"}\n')
    with pytest.raises(ValueError, match="needs 'id' and 'prompt'"):
        load_prompts(tmp_path / "p.jsonl")
    with pytest.raises(ValueError, match="no images"):
        load_references(tmp_path)


def test_parse_weights():
    assert parse_weights("clip=0.5, dino=0.25,mllm=1") == {"clip": 0.5, "dino": 0.25, "mllm": 1.0}
    with pytest.raises(ValueError, match="name=value"):
        parse_weights("clip")


def test_cli_run_resumes_and_compare(tmp_path, encoder_dirs, scorer, capsys):
    refs = reference_images(2)
    (tmp_path / "refs").mkdir()
    for item, image in refs.items():
        image.save(tmp_path / "refs" / f"{item}.png")
    answers = write_answers_jsonl(loop_answers(refs, T, N), tmp_path / "answers.jsonl")
    argv = ["run", "--references", str(tmp_path / "refs"), "--generator", "regen_helpers:noise_generate",
            "--model", answers, "--backend", "regen_helpers:MetaReplayJudge", "--out", str(tmp_path / "run"),
            "--rounds", str(T), "--clip-model", encoder_dirs["clip"], "--dino-model", encoder_dirs["dino"],
            "--encoder-device", "cpu"]
    assert run_cli(argv) == 0
    first = capsys.readouterr().out
    assert first.count("CLIP") == 3 and "scored 2, not applicable 0, failed 0 of 2" in first
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert [tuple(r)[:3] for r in records] == [("id", "status", "score")] * 2
    assert run_cli(argv) == 0  # resumes: nothing to do, same output
    assert capsys.readouterr().out == first
    assert run_cli([*argv, "--variants", "2"]) == 2  # the run folder was made with N = 3
    assert "different settings (variants)" in capsys.readouterr().err
    # compare the reference folder with the chosen regenerations
    (tmp_path / "gens").mkdir()
    for item in refs:
        result = json.loads((tmp_path / "run" / "items" / item / "result.json").read_text())
        Image.open(tmp_path / "run" / result["image"]).save(tmp_path / "gens" / f"{item}.png")
    out_csv = tmp_path / "pairs.csv"
    assert run_cli(["compare", str(tmp_path / "refs"), str(tmp_path / "gens"), "--json", "--csv", str(out_csv),
                    "--clip-model", encoder_dirs["clip"], "--dino-model", encoder_dirs["dino"],
                    "--encoder-device", "cpu"]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = scorer.score([Image.open(tmp_path / "refs" / f"{i}.png") for i in refs],
                            [Image.open(tmp_path / "gens" / f"{i}.png") for i in refs])
    assert [p["clip"] for p in shown["pairs"]] == pytest.approx([e["clip"] for e in expected], abs=1e-6)
    assert shown["summary"]["pairs"] == 2 and out_csv.read_text().startswith("id,status,score,clip,dino")
    assert run_cli(["compare", str(tmp_path / "refs"), str(tmp_path / "nowhere")]) == 2


def test_registered_method_and_command_with_a_diffusers_generator(tmp_path, encoder_dirs, capsys):
    from regeneration.spec import SPEC
    from vlmjudge.cli import main
    from vlmjudge.registry import get_method
    from vlmjudge.testing.tiny_diffusers import build_tiny_text_to_image

    assert get_method("regeneration") is SPEC
    refs = reference_images(1)
    (tmp_path / "refs").mkdir()
    refs["ref0"].save(tmp_path / "refs" / "ref0.png")
    answers = loop_answers(refs, 1, 2, exact_at=lambda item, t: 0, final=False)
    argv = ["regeneration", "run", "--references", str(tmp_path / "refs"),
            "--generator", build_tiny_text_to_image(tmp_path / "sd"), "--generator-device", "cpu", "--steps", "1",
            "--guidance-scale", "1.0", "--model", write_answers_jsonl(answers, tmp_path / "a.jsonl"),
            "--backend", "regen_helpers:MetaReplayJudge", "--out", str(tmp_path / "run"), "--rounds", "1",
            "--variants", "2", "--no-final-mllm", "--weights", "clip=1", "--clip-model", encoder_dirs["clip"],
            "--dino-model", encoder_dirs["dino"], "--encoder-device", "cpu"]
    assert main(argv) == 0
    assert "scored 1, not applicable 0, failed 0 of 1" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "run" / "items" / "ref0" / "round_1").glob("*.png")) == [
        "cand_0.png", "cand_1.png"]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["weights"] == {"clip": 1.0, "dino": 0.0, "mllm": 0.0} and config["generator"].endswith("sd")
