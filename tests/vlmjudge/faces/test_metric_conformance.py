"""One shared conformance test for the four methods' torchmetrics Metrics (TerraVisScore,
VIEScore2Score, FagerScore, RegenerationSimilarity): each is a `vlmjudge.faces.JudgeMetric`
whose copies share the judge (or encoders), with the same empty-state behaviour, declared and
annotated states, a functional form through the class's update path, and DDP reduction over
two gloo processes equal to one process over everything."""
import copy
import math
import pickle

import pytest
import torch

from faces_cases import CASES, PROMPTS, SPLITS, TERRAVIS_PACK, assert_value, ddp_worker, items_of, qa_set

from vlmjudge.distributed import run_local_group
from vlmjudge.faces.metric import JudgeMetric, State

METHOD_METRICS = ("TerraVisScore", "VIEScore2Score", "FagerScore", "RegenerationSimilarity")


def _functional(name, res, start, end):
    """The method's functional form over items [start, end)."""
    images = res.images[start:end]
    if name == "TerraVisScore":
        from terravis.metric import terravis_score
        return terravis_score(images, res.judge, pack=TERRAVIS_PACK)
    if name == "VIEScore2Score":
        from viescore2.metric import viescore2_score
        return viescore2_score(images, PROMPTS[start:end], res.judge, fields="overall")
    if name == "FagerScore":
        from fager.metric import fager_score
        return fager_score(images, PROMPTS[start:end], res.judge, qa_sets=[qa_set(p) for p in PROMPTS[start:end]])
    from regeneration.metric import regeneration_similarity
    return regeneration_similarity(*CASES[name].batch(res, start, end), res.clip, res.dino)


def _all_nan(value):
    values = value.values() if isinstance(value, dict) else [value]
    return all(isinstance(v, torch.Tensor) and v.numel() == 1 and math.isnan(float(v)) for v in values)


@pytest.fixture(params=METHOD_METRICS)
def case(request):
    return CASES[request.param]


def test_each_method_metric_is_a_judge_metric_with_declared_annotated_states(case, res):
    metric = case.make(res)
    cls = type(metric)
    assert isinstance(metric, JudgeMetric)
    assert set(metric._defaults) == set(cls.states) and cls.states  # states come from the declaration only
    annotated = {name for klass in cls.__mro__ for name in getattr(klass, "__annotations__", {})}
    assert set(cls.states) <= annotated
    for name, state in cls.states.items():
        assert isinstance(state, State)
        reduce = metric._reductions[name].__name__
        assert reduce == {"sum": "dim_zero_sum", "cat": "dim_zero_cat"}[state.reduce], (name, reduce)
        default = metric._defaults[name]
        assert default == [] if state.reduce == "cat" else default.dtype == state.dtype


def test_a_state_without_an_annotation_is_refused():
    with pytest.raises(TypeError, match="not annotated"):
        type("Undeclared", (JudgeMetric,), {"states": {"total": State("sum")}})


def test_clone_deepcopy_and_pickle_share_the_judge(case, res):
    metric = case.make(res)
    metric.update(*case.batch(res, 0, 1))
    shared = case.shared(metric)
    for copy_ in (metric.clone(), copy.deepcopy(metric), pickle.loads(pickle.dumps(metric))):
        assert copy_._handle is metric._handle
        got = case.shared(copy_)
        assert got is shared or (isinstance(shared, tuple) and all(a is b for a, b in zip(got, shared)))


def test_compute_before_any_update_is_nan_with_a_warning(case, res):
    metric = case.make(res)
    with pytest.warns(UserWarning, match="before the ``update``"):
        empty = metric.compute()
    assert _all_nan(empty), empty
    metric.update(*case.batch(res, 0, 1))
    metric.reset()
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert _all_nan(metric.compute())


def test_the_functional_form_equals_one_update(case, res):
    for start, end in SPLITS[:2]:
        assert_value(_functional(case.name, res, start, end), case.reference(res, range(start, end)))


@pytest.fixture(scope="module")
def ranks(res, model_paths):
    for name in METHOD_METRICS:  # fill the shared response cache: the ranks replay these answers
        CASES[name].reference(res, items_of(SPLITS))
    args = {"paths": model_paths, "cases": list(METHOD_METRICS)}
    return run_local_group(ddp_worker, [args, args], timeout_s=240)


def test_ddp_reduction_over_two_processes_equals_one_process(ranks, res, case):
    expected = case.reference(res, items_of(SPLITS))
    assert len(ranks) == 2
    for rank in ranks:  # each rank updated with its half; the synced compute() pools both
        assert_value(rank[case.name]["value"], expected)
