"""`--ray`: a local Ray cluster (2 CPUs) generates with a pool of generator actors and judges with a
pool of judge actors, each holding one judge and every method; the runs equal the in-process ones."""
import json
import os
import sys

import pytest
from bench_run_support import PROMPT_IDS

import vlmjudge

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

IDS = PROMPT_IDS[:4]


@pytest.fixture(scope="module")
def local_ray():
    # the actors import the test helpers (the judged toy method) by name, as the driver does
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
                                       "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}})
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()


def test_ray_pools_write_the_in_process_runs(local_ray, tmp_path, photo_suite, tiny_pipeline, tiny_vlm_path,
                                             write_prompts, board_calls):
    common = {"prompts": str(write_prompts(tmp_path / "p.csv", IDS)), "methods": "bench_run_support:JUDGED",
              "model_images": {"alpha": str(photo_suite / "alpha")}, "generators": {"sd": tiny_pipeline},
              "steps": 2, "size": 32, "judge": tiny_vlm_path("qwen3_vl"), "device": "cpu", "quiet": True,
              "chunk_size": 2}
    vlmjudge.benchmark(out=tmp_path / "alone", **common)
    pooled = vlmjudge.benchmark(out=tmp_path / "ray", ray=True, ray_actors=1, **common)
    assert pooled.status == 0 and pooled.manifest["ray"] is True
    for model in ("alpha", "sd"):
        path = ("runs", model, "toyjudged", "records.jsonl")
        got = [json.loads(line) for line in (tmp_path / "ray").joinpath(*path).open()]
        want = [json.loads(line) for line in (tmp_path / "alone").joinpath(*path).open()]
        assert [r["id"] for r in got] == IDS
        assert [r["score"] for r in got] == pytest.approx([r["score"] for r in want], abs=1e-5)
    models = {m["name"]: m for m in pooled.manifest["models"]}
    assert models["sd"]["generation"] == {"generated": 4, "kept": 0}
    assert models["alpha"]["images"] == models["alpha"]["images_encoded"] == 4 and models["alpha"]["model_calls"] == 4
    assert sum(pooled.manifest["images_per_share"]) == 8 and len(pooled.manifest["images_per_share"]) >= 2
    assert pooled.manifest["judge"]["model"] == tiny_vlm_path("qwen3_vl")
