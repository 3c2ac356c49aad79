"""Two processes under torchrun's environment (gloo on CPU) run one benchmark: each generates and
judges its half, process 0 writes runs equal to a single process's, and the judge's work per
model adds up to the single process's."""
import json

import pytest
from bench_run_support import MODELS, PROMPT_IDS, group_worker

import vlmjudge
from vlmjudge.distributed import run_local_group

#: Batch composition moves probabilities by ~1e-7 (left padding); everything else must be equal.
FLOAT_TOL = 1e-5


def close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, abs=FLOAT_TOL)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def test_two_processes_write_the_single_process_runs(tmp_path, photo_suite, tiny_pipeline, tiny_vlm_path,
                                                     board_calls):
    common = {"prompts": str(photo_suite / "prompts.csv"), "methods": "bench_run_support:JUDGED",
              "model_images": {name: str(photo_suite / name) for name in MODELS[:2]},
              "generators": {"sd": tiny_pipeline}, "steps": 2, "size": 32, "judge": tiny_vlm_path("qwen3_vl"),
              "device": "cpu", "quiet": True, "chunk_size": 4}
    single = vlmjudge.benchmark(out=tmp_path / "single", **common)
    args = {"benchmark": {**common, "out": str(tmp_path / "group")},
            "hf_home": [str(tmp_path / "hf0"), str(tmp_path / "hf1")]}
    ranks = run_local_group(group_worker, [args, args], init_group=False)
    assert [r["status"] for r in ranks] == [0, 0] and ranks[1]["manifest"] == {}
    manifest = ranks[0]["manifest"]
    assert manifest["processes"] == 2 and manifest["images_per_share"] == [18, 18]  # 36 images, half each
    for name in MODELS[:2]:
        path = ("runs", name, "toyjudged", "records.jsonl")
        group = [json.loads(line) for line in (tmp_path / "group").joinpath(*path).open()]
        alone = [json.loads(line) for line in (tmp_path / "single").joinpath(*path).open()]
        assert [r["id"] for r in group] == PROMPT_IDS and close(group, alone)
    by_name = {m["name"]: m for m in manifest["models"]}
    alone = {m["name"]: m for m in single.manifest["models"]}
    for name in MODELS[:2]:
        assert by_name[name]["model_calls"] == alone[name]["model_calls"] == 12  # one question per image, once
        assert by_name[name]["images"] == by_name[name]["images_encoded"] == 12
    assert by_name["sd"]["generation"] == {"generated": 12, "kept": 0}
    assert sorted(p.name for p in (tmp_path / "group" / "images" / "sd").glob("*.png")) == [f"{i}.png" for i in PROMPT_IDS]

