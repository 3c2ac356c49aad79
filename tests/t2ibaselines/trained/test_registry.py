"""The trained scorers as registered methods: every acceptance name is an entry point that loads
a spec without torch, names its extra and modules, and saved runs compare like any method's."""
from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import pytest

from vlmjudge.registry import get_method, method_names

REPO = Path(__file__).resolve().parents[3]
NAMES = ("clipscore", "pickscore", "hpsv2", "imagereward", "aesthetic", "musiq", "niqe", "brisque", "lpips")


def _setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    return config


def test_every_scorer_is_a_method_and_a_command_of_setup_cfg():
    entry_points = _setup_cfg()["options.entry_points"]
    methods = dict(line.replace(" ", "").split("=") for line in entry_points["vlmjudge.methods"].strip().splitlines())
    commands = dict(line.replace(" ", "").split("=") for line in entry_points["vlmjudge.commands"].strip().splitlines())
    for name in NAMES:
        assert methods[name].startswith("t2ibaselines.trained."), name
        assert commands[name] == "t2ibaselines.cli:configure", name
    assert set(NAMES) <= set(method_names())


@pytest.mark.parametrize("name", NAMES)
def test_each_spec_is_judge_free_and_says_its_direction(name):
    spec = get_method(name)
    assert spec.name == name and spec.default_model is None and "id" in spec.optional_inputs
    assert set(spec.statistics) == {"mean_score"}
    lower_is_better = {"niqe", "brisque", "lpips"}
    assert spec.statistics["mean_score"].higher_is_better is (name not in lower_is_better)


def test_every_extra_named_by_a_scorer_exists_and_the_test_extra_holds_the_installable_ones():
    extras = _setup_cfg()["options.extras_require"]
    named = {get_method(name).extra for name in NAMES} - {None}
    assert named == {"hpsv2", "imagereward", "aesthetic", "iqa"} and named <= set(extras)
    test_extra = extras["test"]
    assert "pyiqa" in test_extra and "aesthetic-predictor-v2-5" in test_extra
    assert "hpsv2" not in test_extra and "image-reward" not in test_extra  # pins that clash (docs say which)
    baselines = extras["baselines"]
    assert all(package in baselines for package in ("hpsv2x", "aesthetic-predictor-v2-5", "pyiqa"))


def test_loading_every_spec_imports_no_torch():
    code = ("import sys; from vlmjudge.registry import get_method\n"
            f"[get_method(name) for name in {NAMES!r}]\n"
            f"[get_method(name).missing_requirements() for name in {NAMES!r}]\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"


def test_each_spec_names_what_it_needs():
    assert (get_method("musiq").extra, get_method("musiq").requires) == ("iqa", ("pyiqa",))
    assert get_method("lpips").extra is None and get_method("lpips").missing_requirements() == []  # core deps


def test_a_missing_package_reads_as_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyiqa", None)
    assert get_method("musiq").missing_requirements() == ["pyiqa"]


def test_saved_runs_of_a_trained_scorer_compare_with_its_statistic(tmp_path):
    from vlmjudge.stats.statistic import item_rows, value_of

    spec = get_method("lpips")
    run = [{"id": "a", "status": "scored", "score": 0.25}, {"id": "b", "status": "failed", "score": None},
           {"id": "c", "status": "scored", "score": 0.75}]
    statistic = spec.statistics["mean_score"]
    assert value_of(run, statistic) == pytest.approx(0.5)
    rows = item_rows(run, statistic)
    assert [r["id"] for r in rows] == ["a", "b", "c"] and rows[1]["row"][0] != rows[1]["row"][0]  # NaN: a failure


def test_two_clipscore_runs_compare_under_vlmjudge_compare(tiny_encoder_dirs, noise):
    """Records the scorer wrote, paired by id and resampled by `vlmjudge.compare`."""
    from t2ibaselines.trained.clipscore import ClipScoreScorer
    from vlmjudge import compare

    scorer = ClipScoreScorer(model=tiny_encoder_dirs["clip"], device="cpu")
    prompts = ["a photo of a red cat", "a drawing of a blue house", "a sketch of a dog", "an image of a green tree"]
    ids = ["p1", "p2", "p3", "p4"]
    runs = [[r.to_json() for r in scorer.score_batch({"image": noise(4, seed=seed), "prompt": prompts, "id": ids})]
            for seed in (1, 2)]
    result = compare(runs, labels=["model_a", "model_b"], method="clipscore", n_resamples=200)
    board = {row["label"]: row for row in result["leaderboard"]}
    for label, run in zip(("model_a", "model_b"), runs):
        assert board[label]["value"] == pytest.approx(sum(r["score"] for r in run) / len(run))
        assert board[label]["n"] == 4


def test_device_of_the_command_line_reaches_a_trained_scorer(tiny_encoder_dirs, noise, tmp_path):
    """`--device` is the scorer's own device (there is no judge to take it); a --method-option wins."""
    import json

    from vlmjudge.cli import main

    for k, image in enumerate(noise(2)):
        image.save(tmp_path / f"{k}.png")
    (tmp_path / "p.csv").write_text("id,prompt\n0,a red cat\n1,a blue car\n")
    base = ["clipscore", "score", str(tmp_path / "0.png"), str(tmp_path / "1.png"), "--prompts",
            str(tmp_path / "p.csv"), "--method-option", f"model={tiny_encoder_dirs['clip']}", "--quiet"]
    assert main([*base, "--device", "cpu", "--out", str(tmp_path / "a.jsonl")]) == 0
    assert json.loads((tmp_path / "a.manifest.json").read_text())["config"]["device"] == "cpu"
    assert main([*base, "--device", "cuda:7", "--method-option", "device=cpu", "--out", str(tmp_path / "b.jsonl")]) == 0
    assert json.loads((tmp_path / "b.manifest.json").read_text())["config"]["device"] == "cpu"
