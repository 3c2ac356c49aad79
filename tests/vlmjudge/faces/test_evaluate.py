"""evaluate's own metric-module checks over the four modules in metrics/: the `_KWARGS_DESCRIPTION`
examples run as doctests (as evaluate's LocalModuleTest runs them, `evaluate.load` by bare
name resolving to metrics/), add_batch + add + compute equals one compute, num_process=2
equals one process, the card's front matter is a Space's, and `evaluate.combine` works."""
import doctest
import importlib
import inspect
import uuid
from pathlib import Path
from unittest import mock

import pytest
import yaml

from faces_cases import JUDGE_KWARGS, PROMPTS, TERRAVIS_PACK, qa_set
from interval_checks import check_result_keys

from ranks import run_ranks

evaluate = pytest.importorskip("evaluate")
METRICS = Path(__file__).resolve().parents[3] / "metrics"
MODULES = ("terravis", "viescore2", "fager", "regeneration")
N = 4  # images per run


@pytest.fixture(autouse=True)
def hf_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))


def local_load(name, *args, **kwargs):
    """evaluate.load, with a bare module name resolving to this repository's metrics/ folder."""
    path = name if "/" in name or "\\" in name else str(METRICS / name)
    return _original_load(path, *args, **kwargs)


_original_load = evaluate.load


def module_kwargs(name, model_paths, judge=None):
    """Load-time keywords of each module over the shared tiny models (a judge, or its folder)."""
    judge_opts = {"judge": judge} if judge is not None else {
        "model": model_paths["vlm"], "judge_kwargs": {**JUDGE_KWARGS, "cache": model_paths["cache"]}}
    if name == "terravis":
        if judge is None:
            judge_opts = {"model": model_paths["vlm"], "cache": model_paths["cache"], **JUDGE_KWARGS}
        return {**judge_opts, "pack": TERRAVIS_PACK}
    if name == "viescore2":
        return {**judge_opts, "fields": "overall"}
    if name == "fager":
        return {**judge_opts, "qa_sets": [qa_set(p) for p in PROMPTS]}
    return {"clip_model": model_paths["clip"], "dino_model": model_paths["dino"], "device": "cpu"}


def load_module(name, model_paths, tmp_path, judge=None, **kwargs):
    config = ("default",) if name == "viescore2" else ()
    return local_load(name, *config, cache_dir=str(tmp_path / f"data-{uuid.uuid4().hex[:6]}"),
                      **module_kwargs(name, model_paths, judge), **kwargs)


def columns(name, res, start=0, end=N):
    """The inputs of items [start, end) of a module, by its feature names."""
    images = res.images[start:end]
    if name == "terravis":
        return {"images": images}
    if name in ("viescore2", "fager"):
        return {"images": images, "prompts": PROMPTS[start:end]}
    return {"images": images, "reference_images": [i.transpose(0) for i in images]}


def one(batch, k):
    """Example k of a batch, under the single-example names `add` takes."""
    singular = {"images": "image", "prompts": "prompt", "reference_images": "reference_image"}
    return {singular[key]: values[k] for key, values in batch.items()}


def comparable(result):
    """A result without what depends on the split into processes (image ids in records, the
    manifest of each process's own judge)."""
    out = {k: v for k, v in result.items() if k != "manifest"}
    if "records" in out:
        out["records"] = [{k: v for k, v in r.items() if k not in ("id", "image_id")} for r in out["records"]]
    return out


def assert_same_result(got, want, where="result"):
    """Equal results; floats to 1e-6 relative (encoders batch differently when called in parts)."""
    if isinstance(want, float) and isinstance(got, float):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-9, nan_ok=True), where
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for key in want:
            assert_same_result(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_result(g, w, f"{where}[{i}]")
    else:
        assert got == want, where


# -- the examples ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", MODULES)
def test_kwargs_examples_run_under_evaluates_doctest_check(name):
    script = importlib.import_module(
        evaluate.loading.evaluation_module_factory(str(METRICS / name), module_type="metric").module_path)
    assert "+SKIP" not in script._KWARGS_DESCRIPTION
    main_class = evaluate.loading.import_main_class(script.__name__)
    parameters = inspect.signature(main_class._compute).parameters.values()
    assert all(p.kind != p.VAR_KEYWORD for p in parameters)  # evaluate's check: no **kwargs
    doctest.ELLIPSIS_MARKER = "[...]"
    with mock.patch("evaluate.load", side_effect=local_load):
        try:
            results = doctest.testmod(script, raise_on_error=True)
        except doctest.UnexpectedException as exc:
            raise exc.exc_info[1]
    assert results.failed == 0 and results.attempted > 5


# -- adding in parts --------------------------------------------------------------------------
@pytest.mark.parametrize("name", MODULES)
def test_add_batch_and_add_then_compute_equal_one_compute(name, res, model_paths, tmp_path):
    judge = None if name == "regeneration" else res.judge
    options = {"per_pair": True} if name == "regeneration" else {}  # per-item lists, as the others give
    expected = load_module(name, model_paths, tmp_path, judge).compute(**columns(name, res), **options)
    check_result_keys(expected, name, expected["scores"])  # the mean with its interval and n
    if name == "regeneration":
        for key in ("clip", "dino"):
            check_result_keys(expected, key, expected[f"{key}_per_pair"])
    module = load_module(name, model_paths, tmp_path, judge)
    module.add_batch(**columns(name, res, 0, 2))
    module.add(**one(columns(name, res, 2, 3), 0))
    module.add_batch(**columns(name, res, 3, N))
    assert_same_result(module.compute(**options), expected)
    assert len(expected["scores"]) == N


@pytest.mark.parametrize("name", MODULES)
def test_two_processes_equal_one(name, res, model_paths, tmp_path):
    """Each process scores its own shard with its own judge (loaded from the same folder and
    response cache); process 0 aggregates both, the same as one process over everything."""
    expected = load_module(name, model_paths, tmp_path, None if name == "regeneration" else res.judge) \
        .compute(**columns(name, res))
    experiment = f"faces-{name}-{uuid.uuid4().hex[:6]}"
    shared = str(tmp_path / "shared")
    modules = {rank: local_load(name, *(("default",) if name == "viescore2" else ()), num_process=2,
                                process_id=rank, experiment_id=experiment, cache_dir=shared, timeout=120,
                                **module_kwargs(name, model_paths))
               for rank in (0, 1)}
    shards = {0: (0, 2), 1: (2, N)}

    def step(rank):
        modules[rank].add_batch(**columns(name, res, *shards[rank]))
        return modules[rank].compute()

    results = run_ranks(shards, step, timeout=300)
    assert results[1] is None  # only process 0 aggregates
    assert_same_result(comparable(results[0]), comparable(expected))


def test_the_shared_keys_put_the_interval_and_n_beside_the_mean():
    from types import SimpleNamespace

    from vlmjudge.faces.module import ScoredModule

    module = SimpleNamespace(spec=SimpleNamespace(name="toy"))
    spread = ScoredModule.shared_result(module, [0.25, None, 0.75, 0.5])
    check_result_keys(spread, "toy", spread["scores"])
    assert spread["toy_n"] == spread["n_scored"] == 3 and spread["toy_ci"][0] < spread["toy_ci"][1]
    same = ScoredModule.shared_result(module, [0.5, 0.5, None])
    assert (same["toy"], same["toy_ci"], same["toy_n"]) == (0.5, [0.5, 0.5], 2)  # zero width
    one = ScoredModule.shared_result(module, [0.5, None])
    assert (one["toy"], one["toy_ci"], one["toy_n"]) == (0.5, None, 1)  # no interval under two items
    none = ScoredModule.shared_result(module, [None])
    assert (none["toy"], none["toy_ci"], none["toy_n"]) == (None, None, 0)


# -- the card --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", MODULES)
def test_card_front_matter_is_a_spaces(name):
    text = (METRICS / name / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n", 2)[1])
    for field in ("title", "emoji", "colorFrom", "colorTo", "sdk", "sdk_version", "app_file", "tags",
                  "description"):
        assert front.get(field), f"{name}: front matter lacks {field}"
    assert front["sdk"] == "gradio" and (METRICS / name / front["app_file"]).is_file()
    assert {"evaluate", "metric"} <= set(front["tags"])
    assert all(part.isdigit() for part in str(front["sdk_version"]).split("."))
    assert (METRICS / name / "requirements.txt").is_file()


# -- evaluate.combine ------------------------------------------------------------------------
def test_combine_adds_and_computes_over_the_four_modules(res, model_paths, tmp_path):
    def four():
        return [load_module(n, model_paths, tmp_path, None if n == "regeneration" else res.judge) for n in MODULES]

    modules = four()
    alone = [module.compute(**columns(name, res)) for name, module in zip(MODULES, modules)]
    names = [module.name for module in modules]  # the prefixes combine gives shared result keys
    everything = {**columns("terravis", res), **columns("fager", res), **columns("regeneration", res)}
    assert everything["images"] == columns("terravis", res)["images"]  # one name, the same images, for every module
    combined = evaluate.combine(four())
    combined.add_batch(**{k: v[:2] for k, v in everything.items()})
    combined.add(**{k: v[2] for k, v in everything.items()})
    combined.add_batch(**{k: v[3:] for k, v in everything.items()})
    merged = combined.compute()
    shared_keys = {k for r in alone for k in r if sum(k in other for other in alone) > 1}
    assert "scores" in shared_keys
    for name, result in zip(names, alone):
        for key, value in result.items():
            assert_same_result(merged[f"{name}_{key}" if key in shared_keys else key], value, f"{name}.{key}")
    assert merged["terravis_scores"] == alone[0]["scores"] and len(merged[f"{names[2]}_scores"]) == N


def test_combine_inputs_are_checked(res, model_paths, tmp_path):
    """What combine passes a module that has no such input is refused when given a value, and
    load-time QA sets must name each prompt once."""
    fager = load_module("fager", model_paths, tmp_path, res.judge)
    with pytest.raises(ValueError, match="not predictions/references"):
        fager.compute(predictions=["x"])
    terravis = load_module("terravis", model_paths, tmp_path, res.judge)
    with pytest.raises(ValueError, match="image= or images="):
        terravis.add(image=res.images[0], images=res.images[0])
    with pytest.raises(ValueError, match="one set per prompt"):
        local_load("fager", judge=res.judge, qa_sets=[qa_set(PROMPTS[0])] * 2, cache_dir=str(tmp_path / "bad"))
