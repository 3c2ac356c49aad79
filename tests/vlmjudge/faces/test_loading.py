"""Every face loads its judge through vlmjudge.faces with the same arguments and one no-model
rule: the method's default model. The loader is intercepted, so no model is loaded: each case
asserts what would be loaded."""
import argparse
from pathlib import Path

import pytest

from vlmjudge.backends.replay import ReplayJudge
from vlmjudge.faces import loading

REPO = Path(__file__).resolve().parents[3]
DEFAULT = "Qwen/Qwen3-VL-8B-Instruct"


@pytest.fixture
def loaded(monkeypatch):
    """The recipes every face asked the loader for; each gets a replay judge with no answers."""
    recipes = []

    def fake_load(recipe):
        recipes.append(recipe)
        return ReplayJudge({})

    monkeypatch.setattr(loading.JudgeRecipe, "load", fake_load)
    return recipes


def _metric(name, **kwargs):
    if name == "terravis":
        from terravis.metric import TerraVisScore
        return TerraVisScore(**kwargs)
    if name == "viescore2":
        from viescore2.metric import VIEScore2Score
        return VIEScore2Score(**kwargs)
    from fager.metric import FagerScore
    return FagerScore(**kwargs)


@pytest.mark.parametrize("name", ["terravis", "viescore2", "fager"])
def test_a_metric_without_a_model_loads_the_methods_default(loaded, name):
    _metric(name)
    assert [r.model for r in loaded] == [DEFAULT]


@pytest.mark.parametrize("name", ["terravis", "viescore2", "fager"])
def test_a_metric_takes_the_six_judge_arguments_and_refuses_the_old_names(loaded, name):
    _metric(name, model="my/vlm", backend="replay", revision="r1", device="cpu", dtype="float32", cache="c.sqlite",
            judge_kwargs={"batch_size": 2})
    (recipe,) = loaded
    assert (recipe.model, recipe.backend, recipe.revision, recipe.device, recipe.dtype, recipe.cache) == \
        ("my/vlm", "replay", "r1", "cpu", "float32", "c.sqlite")
    assert dict(recipe.extra) == {"batch_size": 2}
    with pytest.raises((TypeError, ValueError), match="judge_model"):  # names from before 0.1.0 are gone
        _metric(name, judge_model="old/vlm", judge_backend="replay")


def test_a_judge_and_a_model_together_are_refused(loaded):
    from terravis.metric import TerraVisScore
    with pytest.raises(ValueError, match="either judge="):
        TerraVisScore(ReplayJudge({}), model="my/vlm")
    assert loaded == []


@pytest.mark.parametrize("name", ["terravis", "viescore2", "fager"])
def test_an_evaluate_module_without_a_model_loads_the_same_default(loaded, name, tmp_path, monkeypatch):
    evaluate = pytest.importorskip("evaluate")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    config = ("default",) if name == "viescore2" else ()
    module = evaluate.load(str(REPO / "metrics" / name), *config, cache_dir=str(tmp_path / "cache"))
    module.scorer()  # fager loads on first use, the others at load time
    assert [r.model for r in loaded] == [DEFAULT]


def test_the_regeneration_module_has_no_default_judge_and_takes_the_judge_arguments(loaded, tmp_path, monkeypatch):
    evaluate = pytest.importorskip("evaluate")
    from vlmjudge.testing import build_tiny_clip, build_tiny_dinov2
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    encoders = {"clip_model": build_tiny_clip(tmp_path / "clip"), "dino_model": build_tiny_dinov2(tmp_path / "dino"),
                "device": "cpu"}
    module = evaluate.load(str(REPO / "metrics" / "regeneration"), cache_dir=str(tmp_path / "a"), **encoders)
    assert module.judge is None and loaded == []  # CLIP and DINO only
    module = evaluate.load(str(REPO / "metrics" / "regeneration"), cache_dir=str(tmp_path / "b"),
                           model="my/vlm", backend="replay", **encoders)
    assert [(r.model, r.backend, r.device) for r in loaded] == [("my/vlm", "replay", "cpu")]


def test_the_cli_flags_load_the_methods_default_without_model(loaded, monkeypatch):
    from vlmjudge.cli import build_parser
    from vlmjudge.cli.flags import judge_from_args
    args = build_parser().parse_args(["terravis", "score", "x.png", "--device", "cpu", "--revision", "r1", "--out", "r.jsonl"])
    assert args.model is None
    checked = []  # the preflight check of the model (offline here, the default is in no cache)
    monkeypatch.setattr("vlmjudge.cli.flags.check_model", lambda model, revision, defaulted: checked.append(model))
    judge_from_args(args)
    assert checked == [DEFAULT]
    assert [(r.model, r.device, r.revision) for r in loaded] == [(DEFAULT, "cpu", "r1")]
    bare = argparse.Namespace(model=None, backend="transformers", base_url=None, batch_size=1, cache=None)
    from vlmjudge.cli.errors import CommandError
    with pytest.raises(CommandError, match="--model is required"):
        judge_from_args(bare)  # outside a method's sub-command there is no default


def test_a_panel_judge_setting_without_a_model_uses_the_methods_default(loaded):
    from vlmjudge.integrations.panel import release_judges, shared_judge
    release_judges()
    try:
        shared_judge({"device": "cpu"}, DEFAULT)
        shared_judge({"device": "cpu"}, DEFAULT)  # built once per process
        shared_judge({"model": "my/vlm"}, DEFAULT)
    finally:
        release_judges()
    assert [(r.model, r.device) for r in loaded] == [(DEFAULT, "cpu"), ("my/vlm", None)]


def test_the_distributed_runner_uses_the_same_loader(loaded):
    from terravis.spec import SPEC
    from vlmjudge.distributed.common import build_scorer
    build_scorer(SPEC, judge_kwargs={"device": "cpu"})
    assert [(r.model, r.device) for r in loaded] == [(DEFAULT, "cpu")]
