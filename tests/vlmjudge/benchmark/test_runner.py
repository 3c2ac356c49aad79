"""The offline acceptance fixture (12 prompts, three models as folders of photos, the demo judge,
TerraVis and VIEScore2): every run in the scoring commands' layout, equal to the method's own
records, each image encoded once across the methods, `vlmjudge compare` reading the runs as
they are, and a rerun that asks the judge nothing. The leaderboard writers are stand-ins here."""
import contextlib
import io
import json

import pytest
from bench_run_support import MODELS, PROMPT_IDS

from terravis.core import summarize
from terravis.records import ImageRecord
from vlmjudge.cli import main
from vlmjudge.distributed import score_records
from vlmjudge.judge import load_judge
from vlmjudge.outputs import read_run
from vlmjudge.record_schema import check_record

METHODS = ("terravis", "viescore2")


def run_cli(args):
    """`vlmjudge ...` in this process: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def command(photo_suite, demo_judge, out):
    models = [arg for name in MODELS for arg in ("--model-images", f"{name}={photo_suite / name}")]
    return ["benchmark", "--prompts", str(photo_suite / "prompts.csv"), *models, "--methods", ",".join(METHODS),
            "--judge", demo_judge, "--device", "cpu", "--out", str(out)]


@pytest.fixture(scope="module")
def acceptance(photo_suite, demo_judge, board_stand_ins, tmp_path_factory):
    """The acceptance run, then the same command again over the same --out."""
    out = tmp_path_factory.mktemp("acceptance") / "out"
    with pytest.MonkeyPatch.context() as patch:
        calls = board_stand_ins(patch)
        first = run_cli(command(photo_suite, demo_judge, out))
        records = {(m, k): (out / "runs" / m / k / "records.jsonl").read_text() for m in MODELS for k in METHODS}
        manifest = json.loads((out / "benchmark.json").read_text())
        again = run_cli(command(photo_suite, demo_judge, out))
    return {"out": out, "first": first, "again": again, "calls": calls, "records": records, "manifest": manifest,
            "folders": {name: (photo_suite / name).resolve() for name in MODELS}}


def test_every_run_is_written_in_the_scoring_layout(acceptance):
    status, _, err = acceptance["first"]
    assert status == 0, err
    out = acceptance["out"]
    for model in MODELS:
        for method in METHODS:
            records, manifest = read_run(out / "runs" / model / method / "records.jsonl")
            assert [r["id"] for r in records] == PROMPT_IDS  # prompt ids: runs of different models pair
            assert all(check_record(r) for r in records)
            assert manifest["method"] == method and manifest["t2i_model"] == model
            assert manifest["command"] == "vlmjudge benchmark" and manifest["model"].endswith("judge")
            assert manifest["n_items"] == 12 and manifest["n_scored"] == 12 and manifest["missing"] == []
            assert manifest["image_paths"]["p03"] == str(acceptance["folders"][model] / "p03.png")
            assert not (out / "runs" / model / method / "records.jsonl.failures.jsonl").exists()
    assert (out / "judge.cache.sqlite").is_file()


def test_the_benchmark_manifest_says_what_was_benchmarked(acceptance, photo_suite, demo_judge):
    manifest = acceptance["manifest"]
    assert manifest["suite"]["name"] == "prompts" and manifest["suite"]["n_prompts"] == 12
    assert manifest["suite"]["categories"] == {"category": ["animals", "objects"]}
    assert [(m["name"], m["kind"], m["folder"]) for m in manifest["models"]] == [
        (name, "images", str((photo_suite / name).resolve())) for name in MODELS]
    assert [(m["name"], m["options"], m["judge"]) for m in manifest["methods"]] == [
        ("terravis", {}, True), ("viescore2", {}, True)]
    assert manifest["judge"]["model"] == demo_judge and manifest["judge"]["backend"] == "transformers"
    assert manifest["exit_status"] == 0 and manifest["processes"] == 1


def test_each_image_is_encoded_once_across_both_methods(acceptance):
    """Acceptance: a benchmark of terravis,viescore2 on one judge encodes each image once."""
    manifest = acceptance["manifest"]
    for model in manifest["models"]:
        assert model["images"] == 12 and model["images_encoded"] == 12, model
        assert model["model_calls"] > 12  # both methods asked many questions of every image
    assert manifest["images"] == manifest["images_encoded"] == 36


def test_records_equal_the_methods_own_records(acceptance, photo_suite, demo_judge):
    """The same images scored by each method alone (its registered scorer, ids given), with the
    benchmark's answer cache, give the very records the benchmark wrote."""
    judge = load_judge(demo_judge, backend="transformers", device="cpu",
                       cache=str(acceptance["out"] / "judge.cache.sqlite"))
    paths = [str(photo_suite / "beta" / f"{pid}.png") for pid in PROMPT_IDS]
    prompts = [f"a photo of thing number {n}" for n in range(12)]
    alone = {"terravis": score_records("terravis", {"image": paths, "id": PROMPT_IDS}, judge=judge),
             "viescore2": score_records("viescore2", {"image": paths, "prompt": prompts, "id": PROMPT_IDS},
                                        judge=judge)}
    for method in METHODS:
        written = [json.loads(line) for line in acceptance["records"]["beta", method].splitlines()]
        assert written == alone[method]
    assert judge.stats.model_calls == 0  # every answer was the benchmark's


def test_the_leaderboard_writers_get_every_run_and_the_suite(acceptance):
    calls, out = acceptance["calls"], acceptance["out"]
    build = calls["build"][0]
    assert build["runs"] == {m: {k: out / "runs" / m / k / "records.jsonl" for k in METHODS} for m in MODELS}
    assert build["suite"].ids() == PROMPT_IDS
    assert (build["n_resamples"], build["seed"], build["confidence"], build["human"]) == (2000, 0, 0.95, None)
    assert calls["write"][0] == out and calls["report"][0]["dpi"] == 150
    assert (out / "leaderboard.json").is_file() and (out / "report.html").is_file()


def test_compare_reads_the_runs_unchanged(acceptance, tmp_path):
    """`vlmjudge compare OUT/runs/*/terravis/records.jsonl`: one instrument (no --allow-mixed), every
    prompt paired, each run's value its own TerraVis summary."""
    out = acceptance["out"]
    runs = [str(out / "runs" / m / "terravis" / "records.jsonl") for m in MODELS]
    status, _, err = run_cli(["compare", *runs, "--out", str(tmp_path / "cmp"), "--resamples", "200"])
    assert status == 0, err
    result = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert result["method"] == "terravis" and not result["mixed"]
    for row in result["leaderboard"]:
        records, _ = read_run(row["label"] if row["label"].endswith(".jsonl") else runs[MODELS.index(row["label"])])
        mean = summarize([ImageRecord.from_json(r) for r in records])["mean_score"]
        assert row["value"] == pytest.approx(mean, nan_ok=True)


def test_a_rerun_asks_the_judge_nothing_and_writes_the_same_runs(acceptance):
    status, _, err = acceptance["again"]
    assert status == 0, err
    out = acceptance["out"]
    manifest = json.loads((out / "benchmark.json").read_text())
    assert manifest["model_calls"] == 0 and manifest["images_encoded"] == 0
    assert manifest["resumed_from_cache"] > 0
    for (model, method), text in acceptance["records"].items():
        assert (out / "runs" / model / method / "records.jsonl").read_text() == text
