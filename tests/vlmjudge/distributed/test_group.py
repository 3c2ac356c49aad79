"""Two local processes under torchrun's environment (gloo on CPU), each running every face on
its half of the images; every result must equal the single-process one, and each process must
make only its half's model calls.

One group serves all the tests here (process start-up dominates on 2 cores).
"""
import json
import math
import uuid

import evaluate
import pytest
import torch
from dist_support import (
    N_IMAGES,
    PACK,
    REPO,
    ToyMeanScore,
    assert_close,
    group_worker,
)

from terravis.metric import TerraVisScore
from vlmjudge.distributed import run_local_group

HALF = N_IMAGES // 2


@pytest.fixture(scope="module")
def group(tmp_path_factory, tiny_vlm, image_paths, reference):
    tmp = tmp_path_factory.mktemp("dist_group")
    paths = image_paths[:N_IMAGES]
    rows = tmp / "rows.jsonl"
    rows.write_text("".join(json.dumps({"image": p}) + "\n" for p in paths))
    args = {"paths": paths, "model": tiny_vlm, "rows": str(rows), "cli_out": str(tmp / "records.jsonl"),
            "cli_stats": str(tmp / "stats.json"), "eval_cache": str(tmp / "eval_cache"),
            "experiment_id": f"dist-{uuid.uuid4().hex[:8]}", "hf_home": [str(tmp / "hf0"), str(tmp / "hf1")]}
    ranks = run_local_group(group_worker, [args, args], init_group=False)
    return {"ranks": ranks, "cli_out": tmp / "records.jsonl", "cli_stats": tmp / "stats.json"}


def test_cli_under_two_processes_writes_the_single_process_records(group, reference):
    records = [json.loads(line) for line in group["cli_out"].read_text().splitlines()]
    # the runner flags images under the recommended resolution (these test images are small); the
    # rest of each record is the single-process record
    assert all("low resolution" in r.pop("resolution_note") for r in records)
    assert_close(records, reference["toy"])
    stats = json.loads(group["cli_stats"].read_text())
    assert stats["method"] == "toyphoto" and stats["shards"] == [[0, HALF], [HALF, N_IMAGES]]
    assert [s["model_calls"] for s in stats["stats"]] == [HALF, HALF]  # one P(Yes) per image, own half only


def test_accelerate_shards_gather_in_input_order(group, reference):
    expected = reference["terravis"][:N_IMAGES]
    assert [r["id"] for r in expected] == [str(i) for i in range(N_IMAGES)]
    for rank in group["ranks"]:  # every process receives all records
        out = rank["accelerate"]
        assert_close(out["records"], expected)
        assert out["shards"] == [[0, HALF], [HALF, N_IMAGES]] or out["shards"] == [(0, HALF), (HALF, N_IMAGES)]
        assert sum(out["model_calls"]) == reference["terravis_calls"]
        assert min(out["model_calls"]) >= HALF  # at least each own image's eligibility question


def without_ids(records):
    """The module names images "<process_id>:<n>", so ids depend on the split."""
    return [{k: v for k, v in r.items() if k != "id"} for r in records]


def test_evaluate_two_processes_equal_one(group, reference, cached_judge, image_paths, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    rank0, rank1 = (r["evaluate"] for r in group["ranks"])
    assert rank1["result"] is None  # only process 0 aggregates
    single = evaluate.load(str(REPO / "metrics" / "terravis"), judge=cached_judge, pack=PACK,
                           cache_dir=str(tmp_path / "single"))
    expected = single.compute(images=image_paths[:N_IMAGES], return_records=True)
    result = dict(rank0["result"])
    records = result.pop("records")
    assert [r["id"] for r in records] == [f"{p}:{i}" for p in range(2) for i in range(HALF)]
    assert_close(without_ids(records), without_ids(expected.pop("records")))
    assert_close(without_ids(records), without_ids(reference["terravis"][:N_IMAGES]))
    assert_close(result, expected)
    assert expected["n_images"] == N_IMAGES and 0 < expected["n_scored"] < N_IMAGES  # N/A and scored images
    # Each process scored its own half as it added it; process 0 only aggregated.
    assert rank0["n_added"] == rank1["n_added"] == HALF
    assert rank0["model_calls"] + rank1["model_calls"] == reference["terravis_calls"]
    assert min(rank0["model_calls"], rank1["model_calls"]) >= HALF


def test_score_on_add_module_pattern_splits_the_calls(group, reference):
    """store_scored_rows: a module that scores as it adds, for any method (here the toy one)."""
    rank0, rank1 = (r["evaluate_toy"] for r in group["ranks"])
    assert rank1["result"] is None
    expected = [r["score"] for r in reference["toy"]]
    assert rank0["result"]["scores"] == pytest.approx(expected, abs=1e-5)
    assert rank0["result"]["mean"] == pytest.approx(sum(expected) / N_IMAGES, abs=1e-5)
    assert rank0["model_calls"] == rank1["model_calls"] == HALF


def test_toy_metric_ddp_equals_one_process(group, cached_judge, image_paths):
    single = ToyMeanScore(cached_judge)
    for part in (image_paths[:2], image_paths[2:N_IMAGES]):
        single.update(part)
    expected = single.compute()
    for rank in group["ranks"]:
        toy = rank["toy"]
        assert toy["count"] == N_IMAGES  # synced: both halves
        assert toy["mean"] == pytest.approx(float(expected["mean"]), abs=1e-6)
        assert toy["scores"] == pytest.approx(expected["scores"].tolist(), abs=1e-6)  # rank 0's half first
        assert toy["model_calls"] == HALF
    assert len({round(s, 3) for s in expected["scores"].tolist()}) > 1  # order is visible in the values


def test_terravisscore_ddp_equals_one_process(group, cached_judge, image_paths, reference):
    single = TerraVisScore(cached_judge, pack=PACK)
    for part in (image_paths[:2], image_paths[2:N_IMAGES]):
        single.update(part)
    value, details = float(single.compute()), single.details()
    assert details["scores"] == [r["score"] for r in reference["terravis"][:N_IMAGES]]
    calls = []
    for rank in group["ranks"]:
        tv = rank["terravis"]
        assert (math.isnan(tv["value"]) and math.isnan(value)) or tv["value"] == pytest.approx(value, abs=1e-9)
        assert_close(tv["details"], details)
        calls.append(tv["model_calls"])
    assert sum(calls) == reference["terravis_calls"] and min(calls) >= HALF
    assert torch.distributed.is_available()
