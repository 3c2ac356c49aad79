"""torchmetrics' MetricTester checks, as our own shared test over all six Metrics: forward vs
update/compute, reset, pickling, clone / MetricTracker, state_dict round trip, merge_state,
.to() / .double() / .half(), plot(); each against the project's Python API on the same inputs.
DDP with two gloo processes is in test_ddp.py."""
import copy
import gc
import pickle

import matplotlib
import pytest
import torch
from torchmetrics.wrappers import MetricTracker

from faces_cases import CASES, SPLITS, assert_value, items_of

matplotlib.use("Agg")

JUDGED = [name for name, case in CASES.items() if case.shared is not None]


@pytest.fixture(params=list(CASES))
def case(request):
    return CASES[request.param]


def updated(case, res, splits=SPLITS):
    metric = case.make(res)
    for batch in case.batches(res, splits):
        metric.update(*batch)
    return metric


def state_values(metric):
    return {name: copy.deepcopy(getattr(metric, name)) for name in metric._defaults}


def assert_states_equal(a, b):
    assert a.keys() == b.keys()
    for name in a:
        x, y = a[name], b[name]
        if isinstance(x, list):
            assert isinstance(y, list) and len(x) == len(y), name
            for u, v in zip(x, y):
                torch.testing.assert_close(u, v, rtol=0, atol=0, equal_nan=True, msg=name)
        else:
            torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True, msg=name)


def test_the_inputs_are_informative(res):
    """The tiny judge gives these images a mix: TerraVis scores some and finds others N/A (so
    exclusion and order mistakes show), and the encoders give differing values. (The random
    judge reads every image alike for VIEScore2 and FAGER, 4/10 and "no" throughout, so their
    values here are constant but must be read, never failed; their arithmetic is checked on
    varied answers in tests/viescore2 and tests/fager.)"""
    from terravis import TerraVis
    from viescore2 import VIEScore2

    from faces_cases import PROMPTS, TERRAVIS_PACK, qa_set
    from fager.core import Fager
    statuses = [r.status for r in TerraVis(res.judge, pack=TERRAVIS_PACK).score(res.images)]
    assert "scored" in statuses and "not_applicable" in statuses, statuses
    overall = [r.overall for r in VIEScore2(res.judge, fields="overall").score(res.images, PROMPTS)]
    assert None not in overall, overall
    verdicts = Fager(res.judge).score(res.images, PROMPTS, qa_sets=[qa_set(p) for p in PROMPTS])
    assert all(v.score is not None and v.counts.failed == 0 for v in verdicts)
    similarity = CASES["RegenerationSimilarity"].reference
    assert similarity(res, [0]) != similarity(res, [1])


def test_update_compute_equals_the_reference(case, res):
    """The accumulated value over four batches is the Python API's value over all images."""
    metric = updated(case, res)
    assert_value(metric.compute(), case.reference(res, items_of(SPLITS)))


def test_forward_gives_the_batch_value_and_accumulates(case, res):
    metric = case.make(res)
    for start, end in SPLITS:
        assert_value(metric(*case.batch(res, start, end)), case.reference(res, range(start, end)))
    assert_value(metric.compute(), case.reference(res, items_of(SPLITS)))


def test_reset_restores_the_defaults(case, res):
    metric = case.make(res)
    defaults = state_values(metric)
    metric.update(*case.batch(res, 0, 3))
    metric.reset()
    assert_states_equal(state_values(metric), defaults)
    metric.update(*case.batch(res, 3, 6))
    assert_value(metric.compute(), case.reference(res, range(3, 6)))


def test_pickle_round_trip_keeps_states_and_goes_on_updating(case, res):
    metric = updated(case, res, SPLITS[:2])
    loaded = pickle.loads(pickle.dumps(metric))
    assert_states_equal(state_values(loaded), state_values(metric))
    assert_value(loaded.compute(), metric.compute())
    for batch in case.batches(res, SPLITS[2:]):
        loaded.update(*batch)
    assert_value(loaded.compute(), case.reference(res, items_of(SPLITS)))
    if case.shared is not None:  # unpickled where the original lives: the very same judge / encoders
        assert case.shared(loaded) is case.shared(metric) or case.shared(loaded) == case.shared(metric)


def test_state_dict_round_trip(case, res):
    metric = updated(case, res, SPLITS[:2])
    metric.persistent(True)
    saved = metric.state_dict()
    assert set(saved) == set(metric._defaults)  # states only: no judge or encoder weights
    fresh = case.make(res)
    fresh.persistent(True)
    fresh.load_state_dict(saved)
    assert_states_equal(state_values(fresh), state_values(metric))
    for batch in case.batches(res, SPLITS[2:]):
        fresh.update(*batch)
    assert_value(fresh.compute(), case.reference(res, items_of(SPLITS)))


def test_merge_state_pools_two_metrics(case, res):
    first, second = updated(case, res, SPLITS[:2]), updated(case, res, SPLITS[2:])
    first.merge_state(second)
    assert_value(first.compute(), case.reference(res, items_of(SPLITS)))


@pytest.mark.parametrize("move", ["to_cpu", "to_float64", "double", "half"])
def test_device_and_dtype_moves_keep_values_and_the_shared_model(case, res, move):
    metric = updated(case, res, SPLITS[:2])
    shared = case.shared(metric) if case.shared else None
    before = [p.dtype for p in _weights(shared)]
    moved = {"to_cpu": lambda m: m.to("cpu"), "to_float64": lambda m: m.to(torch.float64),
             "double": lambda m: m.double(), "half": lambda m: m.half()}[move](metric)
    assert moved is metric
    for batch in case.batches(res, SPLITS[2:]):
        metric.update(*batch)
    assert_value(metric.compute(), case.reference(res, items_of(SPLITS)))
    if shared is not None:
        assert case.shared(metric) is shared or case.shared(metric) == shared
        assert [p.dtype for p in _weights(shared)] == before  # the judge's weights are never cast


def test_plot_returns_a_figure(case, res):
    import matplotlib.figure
    metric = updated(case, res, SPLITS[:1])
    fig, ax = metric.plot()
    assert isinstance(fig, matplotlib.figure.Figure) and ax is not None
    fig, _ = metric.plot([metric.compute(), metric.compute()])
    assert isinstance(fig, matplotlib.figure.Figure)


def _weights(shared):
    """Parameters of a shared judge's model or of shared encoders' models."""
    if shared is None:
        return []
    models = [getattr(shared, "model", None)] if not isinstance(shared, tuple) else [e.model for e in shared]
    return [p for m in models if m is not None for p in m.parameters()]


# -- item 8: after a real update, copies share the judge and pickles carry none ---------------
@pytest.mark.parametrize("name", JUDGED)
def test_clone_and_tracker_share_the_judge_after_update(name, res):
    case = CASES[name]
    metric = updated(case, res, SPLITS[:1])
    judge_or_encoders = case.shared(metric)
    clone = metric.clone()
    assert case.shared(clone) is judge_or_encoders or case.shared(clone) == judge_or_encoders
    assert _weights(judge_or_encoders)[0] is _weights(case.shared(clone))[0]  # not a copy of the model
    tracker = MetricTracker(metric)
    for _ in range(2):
        tracker.increment()  # a deep copy of the updated metric: its states hold batch 0 already
        tracker.update(*case.batch(res, 1, 3))
    assert _weights(case.shared(tracker[-1]))[0] is _weights(judge_or_encoders)[0]
    assert_value(tracker.compute(), case.reference(res, range(0, 3)))


@pytest.mark.parametrize("name", JUDGED)
def test_pickle_carries_no_model_and_reattaches_elsewhere(name, res):
    """Unpickled after the original is gone (as in another process), a metric given a ready
    judge says how to re-attach one, and works again once it has."""
    from vlmjudge.faces import JudgeNotAttached

    case = CASES[name]
    metric = updated(case, res, SPLITS[:2])
    blob = pickle.dumps(metric)
    weights = sum(p.numel() for p in _weights(case.shared(metric)))
    assert weights > 10_000 and len(blob) < weights  # float32 weights would take 4 bytes each
    del metric
    gc.collect()
    loaded = pickle.loads(blob)
    with pytest.raises(JudgeNotAttached, match="attach_"):
        loaded.update(*case.batch(res, 3, 4))
    if name == "RegenerationSimilarity":
        loaded.attach_encoders(res.clip, res.dino)
    else:
        loaded.attach_judge(res.judge)
    for batch in case.batches(res, SPLITS[2:]):
        loaded.update(*batch)
    assert_value(loaded.compute(), case.reference(res, items_of(SPLITS)))


def test_a_metric_loaded_by_name_rebuilds_its_judge_after_unpickling(res, model_paths):
    """TerraVisScore(model=...) (with a response cache) pickles after use and, where the original
    is gone, loads its judge again from the same arguments on first use."""
    from terravis import TerraVisScore

    from faces_cases import JUDGE_KWARGS, TERRAVIS_PACK
    metric = TerraVisScore(model=model_paths["vlm"], judge_kwargs={**JUDGE_KWARGS, "cache": model_paths["cache"]},
                           pack=TERRAVIS_PACK)
    metric.update(res.images[:2])
    first_judge = metric.scorer.judge
    assert first_judge.cache is not None
    blob = pickle.dumps(metric)
    del metric
    gc.collect()
    loaded = pickle.loads(blob)
    loaded.update(res.images[2:])
    assert loaded.scorer.judge is not first_judge and loaded.scorer.judge.cache.path == model_paths["cache"]
    assert_value(loaded.compute(), CASES["TerraVisScore"].reference(res, range(6)))


def test_a_used_transformers_judge_pickles_without_native_handles(res):
    """After constrained generation (the xgrammar compiler exists), the judge itself pickles;
    the copy answers the same and reopens the cache by path."""
    from viescore2 import VIEScore2

    from faces_cases import PROMPTS
    expected = VIEScore2(res.judge, fields="overall").score(res.images[:2], PROMPTS[:2])
    res.judge.cache, cache = None, res.judge.cache
    try:
        VIEScore2(res.judge, fields="overall").score(res.images[:1], PROMPTS[:1])  # a real constrained call
        assert res.judge._grammars is not None
    finally:
        res.judge.cache = cache
    copy_ = pickle.loads(pickle.dumps(res.judge))
    assert copy_.cache.path == res.judge.cache.path and copy_.cache is not res.judge.cache
    assert copy_._grammars is None and copy_.model is not res.judge.model
    copy_.cache = None  # answer from the copied model itself, not from the cache
    again = VIEScore2(copy_, fields="overall").score(res.images[:2], PROMPTS[:2])
    assert [r.text for r in again] == [r.text for r in expected]
