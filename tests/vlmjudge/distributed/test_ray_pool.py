"""A local Ray cluster (2 CPUs): an actor pool of two judges scores 20 images, sent as PNG
bytes, and returns the single-process records in input order, each actor scoring a share."""
from pathlib import Path

import pytest
from dist_support import JUDGE_KWARGS, N_RAY, PACK, assert_close

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

from vlmjudge.distributed import score_columns_ray


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.wait_for_min_actors_s = 120  # both actors up before batches are handed out
    try:
        yield
    finally:
        ray.shutdown()


def test_ray_actor_pool_equals_single_process(local_ray, tiny_vlm, image_paths, reference):
    images = [Path(p).read_bytes() for p in image_paths]
    out = score_columns_ray("terravis", {"image": images}, model=tiny_vlm, judge_kwargs=JUDGE_KWARGS,
                            method_config={"pack": PACK}, num_actors=2, num_cpus=1, batch_size=5)
    assert len(out.records) == N_RAY
    assert [r["id"] for r in out.records] == [str(i) for i in range(N_RAY)]  # global ids, input order
    assert_close(out.records, reference["terravis"])
    workers = out.stats
    assert len(workers) == 2, workers  # two actors, one judge each
    assert sum(w["rows"] for w in workers) == N_RAY and min(w["rows"] for w in workers) >= 5
    assert all(w["model_calls"] >= w["rows"] for w in workers)  # each asked at least its own eligibility questions
    assert sum(w["model_calls"] for w in workers) == reference["terravis_calls_all"]  # nothing asked twice
