"""metrics/terravis as an evaluate module: scoring on add, aggregation in compute, human
correlations, multi-process sharding, and offline loading by path and by bare name on a
tiny Qwen3-VL."""
import json
import subprocess
import textwrap

import pytest
from PIL import Image

from tvf_helpers import METRIC_DIR, PYTHON, subprocess_env
from tvf_replay import KIND_SCORE, SCORE, item_judge, stage_judge, write_item_answers

evaluate = pytest.importorskip("evaluate")


def load(tmp_path, monkeypatch, **kwargs):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return evaluate.load(str(METRIC_DIR), cache_dir=str(tmp_path / "data"), **kwargs)


def pictures(n):
    return [Image.new("RGB", (8, 8), (40 * i, 10, 10)) for i in range(n)]


def test_images_are_scored_when_added_and_compute_aggregates(tmp_path, monkeypatch):
    judge = item_judge({"0:0": "clean", "0:1": "flawed", "0:2": "na"})
    metric = load(tmp_path, monkeypatch, judge=judge)
    metric.add_batch(images=pictures(2), human_ratings=[5, 2])
    calls_after_batch = judge.stats.model_calls
    assert calls_after_batch == 2 + 36 + 2 + 2  # eligibility, 18 checks each, evidence and severity of 2
    path = tmp_path / "third.png"
    Image.new("RGB", (8, 8), "blue").save(path)
    metric.add(image=str(path), human_rating=None)
    assert judge.stats.model_calls == calls_after_batch + 2  # eligibility and its N/A reason
    out = metric.compute()
    assert judge.stats.model_calls == calls_after_batch + 2  # compute asks the judge nothing
    assert out["scores"] == [1.0, pytest.approx(SCORE), None]
    assert out["terravis"] == pytest.approx((1.0 + SCORE) / 2)
    counts = ("n_images", "n_scored", "n_not_applicable", "n_major", "n_minor")
    assert tuple(out[k] for k in counts) == (3, 2, 1, 1, 1)
    assert out["na_rate"] == pytest.approx(1 / 3)
    assert out["level_shares"] == {"object": 0.5, "interaction": 0.5, "scene": 0.0}
    # two rated pairs, (1.0, 5) and (0.22, 2): every coefficient is exactly 1
    assert out["n_rated"] == 2
    assert (out["spearman"], out["kendall"], out["pearson"]) == pytest.approx((1.0, 1.0, 1.0))


def test_compute_with_images_and_records_and_no_correlations_without_ratings(tmp_path, monkeypatch):
    metric = load(tmp_path, monkeypatch, judge=stage_judge())
    out = metric.compute(images=pictures(2), return_records=True)
    assert out["scores"] == [pytest.approx(SCORE)] * 2 and "spearman" not in out
    flagged = [c for c in out["records"][0]["checks"] if c["detected"]]
    assert [(c["type_id"], c["severity"], c["evidence"]) for c in flagged] == [
        ("biological_anatomy", "major", "Six fingers."), ("support_stability", "minor", "It floats.")]


def test_bad_inputs_fail_clearly(tmp_path, monkeypatch):
    metric = load(tmp_path, monkeypatch, judge=stage_judge())
    with pytest.raises(ValueError, match="no images"):
        metric.compute()
    with pytest.raises(ValueError, match="2 human ratings for 1 images"):
        metric.add_batch(images=pictures(1), human_ratings=[3, 4])
    with pytest.raises(ValueError, match="1..5"):
        metric.add_batch(images=pictures(1), human_ratings=[7])
    with pytest.raises(TypeError, match="list of images"):
        metric.add_batch(images=pictures(1)[0])
    with pytest.raises(ValueError, match="either judge"):
        load(tmp_path, monkeypatch, judge=stage_judge(), model="x")


SHARD = textwrap.dedent('''
    import json, sys
    import evaluate
    from PIL import Image
    rank, answers, cache_dir, metric_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    metric = evaluate.load(metric_dir, backend="replay", model=answers,
                           judge_kwargs={"key_fields": ["item", "stage", "check"]},
                           num_process=2, process_id=rank, experiment_id="shards", cache_dir=cache_dir)
    n = 2 if rank == 0 else 3
    metric.add_batch(images=[Image.new("RGB", (8, 8), (50 * i, rank, 0)) for i in range(n)])
    calls = metric.judge.stats.model_calls
    print(json.dumps({"calls": calls, "result": metric.compute()}))
''')


def test_multi_process_each_process_scores_its_own_shard(tmp_path):
    kinds = {"0:0": "clean", "0:1": "flawed", "1:0": "na", "1:1": "flawed", "1:2": "clean"}
    answers = write_item_answers(tmp_path / "answers.jsonl", kinds)
    script = tmp_path / "shard.py"
    script.write_text(SHARD)
    env = subprocess_env(tmp_path)
    procs = [subprocess.Popen([PYTHON, str(script), str(rank), str(answers), str(tmp_path / "data"), str(METRIC_DIR)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    outs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=240)
        assert proc.returncode == 0, stderr[-3000:]
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    per_image = {"clean": 1 + 18, "flawed": 1 + 18 + 2 + 2, "na": 1 + 1}
    assert outs[0]["calls"] == per_image["clean"] + per_image["flawed"]
    assert outs[1]["calls"] == per_image["na"] + per_image["flawed"] + per_image["clean"]
    assert outs[1]["result"] is None
    result = outs[0]["result"]
    expected = [KIND_SCORE[kinds[i]] for i in ("0:0", "0:1", "1:0", "1:1", "1:2")]
    assert result["scores"] == [pytest.approx(s) if s is not None else None for s in expected]
    assert result["n_images"] == 5 and result["n_not_applicable"] == 1
    assert result["terravis"] == pytest.approx((2 * 1.0 + 2 * SCORE) / 4)


# -- acceptance: offline, on a tiny Qwen3-VL, by path and by bare name ----------------------
OFFLINE = textwrap.dedent('''
    import json, sys
    import evaluate
    from vlmjudge.cli import main as vlmjudge
    model, pack, metric_dir = sys.argv[1:4]
    paths, subset = json.loads(sys.argv[4]), json.loads(sys.argv[5])
    by_path = evaluate.load(metric_dir, model=model, device="cpu", pack=pack)
    out = {"path": by_path.compute(images=paths)}
    assert vlmjudge(["evaluate-modules", "install", "terravis"]) == 0
    bare = evaluate.load("terravis", model=model, device="cpu", pack=pack)
    out["bare"] = bare.compute(images=subset)
    out["bare_calls"] = bare.judge.stats.model_calls
    print("RESULT " + json.dumps(out))
''')


def test_offline_by_path_and_by_bare_name_equal_the_python_api(tmp_path, tiny_model, pack_file, images, reference):
    script = tmp_path / "offline.py"
    script.write_text(OFFLINE)
    ids = list(reference)
    subset = ["modelA/red.png", "modelB/noise.png"]  # cheap: an N/A image and one with few violations
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([PYTHON, str(script), tiny_model, str(pack_file), str(METRIC_DIR),
                           json.dumps([str(images[i]) for i in ids]), json.dumps([str(images[i]) for i in subset])],
                          cwd=elsewhere, env=subprocess_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
    expected = [reference[i].score for i in ids]
    assert out["path"]["scores"] == pytest.approx(expected)
    assert out["path"]["terravis"] == pytest.approx(sum(s for s in expected if s is not None)
                                                    / sum(s is not None for s in expected))
    assert out["path"]["n_not_applicable"] == sum(reference[i].status == "not_applicable" for i in ids)
    assert out["bare"]["scores"] == pytest.approx([reference[i].score for i in subset])
    assert out["bare_calls"] > 0
    assert list((tmp_path / "hf").rglob("evaluate-metric--terravis")), "the installer wrote outside HF_HOME"
