"""The progress of `regeneration run` and `benchmark`: the loop's callback fires once per candidate
image (made, found saved, or never made for a failed reference), and each command's shared bar
counts to its total on a terminal and stays silent with --quiet."""
from __future__ import annotations

import json
import sys

from regen_helpers import run_cli, ToyGenerator, loop_answers, noise_generate, reference_images, replay, write_answers_jsonl

from regeneration.evaluation.benchmark import benchmark_images, run_benchmark
from regeneration.config import LoopConfig
from regeneration.core import RegenerationLoop, candidate_count

T, N = 2, 3


def on_terminal(monkeypatch):
    """Make the captured standard error say it is a terminal, so the shared bar draws on it (called
    in the test body: capsys swaps sys.stderr in only while the test runs)."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)


def test_candidate_count_by_hand():
    assert candidate_count(LoopConfig(rounds=2, variants=3), 5) == 30
    assert candidate_count(LoopConfig(rounds=4, prompt_mode="interrogator"), 5) == 5  # single shot: one image


def test_loop_ticks_once_per_candidate_made_saved_or_never_made(tmp_path, scorer):
    refs = reference_images(3)
    answers = loop_answers(refs, T, N)
    answers[("iut_caption", "ref2", 0, 0)] = None  # ref2's understanding fails: its images are never made
    config = LoopConfig(rounds=T)
    for run in ("first", "resumed"):
        generator, ticks = ToyGenerator(refs), []
        results = RegenerationLoop(replay(answers), generator, scorer, str(tmp_path / "run"), config=config).run(
            refs, on_image=lambda: ticks.append(len(generator.calls)))
        assert [r.status for r in results] == ["scored", "scored", "failed"]
        assert len(ticks) == candidate_count(config, 3) == 18
        assert len(generator.calls) == (12 if run == "first" else 0)
    assert ticks == [0] * 18  # resumed: every tick before (and without) a generator call


def test_benchmark_ticks_for_every_model_and_direct_image(tmp_path, scorer):
    refs = reference_images(2)
    answers = loop_answers(refs, T, N)
    for item in refs:
        answers[("text_image", item, 0, 0)] = json.dumps({"reason": "r", "score": 4})
    prompts = {"ref0": "the original prompt of ref0"}  # ref1 has none: no direct image
    config, ticks = LoopConfig(rounds=T), []
    run_benchmark(refs, {"exact": ToyGenerator(refs), "noise": noise_generate}, replay(answers), tmp_path / "bench",
                  similarity=scorer, config=config, original_prompts=prompts, direct_judging=True, grid_cell=16,
                  on_image=lambda: ticks.append(1))
    assert len(ticks) == benchmark_images(refs, 2, config, prompts, direct_judging=True) == 2 * (2 * T * N + 1)
    assert benchmark_images(refs, 2, config, prompts) == 2 * 2 * T * N  # no direct judging, no direct images


def run_argv(tmp_path, encoder_dirs, command: str) -> list[str]:
    """`regeneration run` (one noise model) or `benchmark` (two) over two references, T rounds of N."""
    refs = reference_images(2)
    (tmp_path / "refs").mkdir(exist_ok=True)
    for item, image in refs.items():
        image.save(tmp_path / "refs" / f"{item}.png")
    answers = write_answers_jsonl(loop_answers(refs, T, N), tmp_path / "answers.jsonl")
    models = (["--generator", "regen_helpers:noise_generate"] if command == "run" else
              ["--generator", "a=regen_helpers:noise_generate", "--generator", "b=regen_helpers:noise_generate"])
    return [command, "--references", str(tmp_path / "refs"), *models, "--model", answers,
            "--backend", "regen_helpers:MetaReplayJudge", "--out", str(tmp_path / command), "--rounds", str(T),
            "--clip-model", encoder_dirs["clip"], "--dino-model", encoder_dirs["dino"], "--encoder-device", "cpu"]


def test_run_bar_counts_candidate_images_and_quiet_hides_it(tmp_path, encoder_dirs, monkeypatch, capsys):
    on_terminal(monkeypatch)
    argv = run_argv(tmp_path, encoder_dirs, "run")
    assert run_cli(argv) == 0
    err = capsys.readouterr().err
    assert "regeneration: 100%" in err and "12/12" in err  # 2 references x 2 rounds x 3 variants
    assert run_cli([*argv, "--quiet"]) == 0  # resumed, without a bar
    captured = capsys.readouterr()
    assert "%|" not in captured.err and "12/12" not in captured.err and "of 2" in captured.out


def test_benchmark_bar_counts_every_models_images_and_quiet_hides_it(tmp_path, encoder_dirs, monkeypatch, capsys):
    on_terminal(monkeypatch)
    argv = run_argv(tmp_path, encoder_dirs, "benchmark")
    assert run_cli(argv) == 0
    err = capsys.readouterr().err
    assert "benchmark: 100%" in err and "24/24" in err  # 2 models x 2 references x 2 rounds x 3 variants
    assert run_cli([*argv, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "%|" not in captured.err and "24/24" not in captured.err and "table:" in captured.out
