"""DDP with two gloo processes, as torchmetrics' MetricTester runs it: each rank updates every
Metric with its half of the batches, and the synced compute() (and the gathered per-image
values) must equal the project's Python API over all the inputs in one process.

One process group serves every case (spawning ranks dominates on 2 cores).
"""
import pytest

from faces_cases import CASES, SPLITS, assert_value, ddp_worker, items_of, per_image

from vlmjudge.distributed import run_local_group


@pytest.fixture(scope="module")
def ranks(res, model_paths):
    for case in CASES.values():  # fill the response cache the ranks share: they replay these answers
        case.reference(res, items_of(SPLITS))
    args = {"paths": model_paths, "cases": list(CASES)}
    return run_local_group(ddp_worker, [args, args], timeout_s=240)


@pytest.mark.parametrize("name", list(CASES))
def test_synced_compute_equals_the_single_process_reference(ranks, res, name):
    expected = CASES[name].reference(res, items_of(SPLITS))
    for rank in ranks:  # every rank receives the pooled value
        assert_value(rank[name]["value"], expected)


@pytest.mark.parametrize("name", [n for n in CASES if n in ("TerraVisScore", "VIEScore2Score", "FagerScore")])
def test_per_image_values_gather_across_ranks_in_rank_order(ranks, res, name):
    case = CASES[name]
    single = case.make(res)
    for batch in case.batches(res):
        single.update(*batch)
    expected = per_image(single)
    assert expected is not None and len(expected) > 0
    for rank in ranks:
        got = rank[name]["per_image"]
        assert len(got) == len(expected)  # both halves, not this rank's own
        assert_value(dict(enumerate(got)), dict(enumerate(expected)))


def test_the_ranks_replayed_the_cache(ranks):
    """Both ranks answered from the response cache the single-process references filled."""
    assert [rank["model_calls"] for rank in ranks] == [0, 0]
