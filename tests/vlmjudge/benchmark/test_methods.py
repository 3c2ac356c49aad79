"""Methods of a benchmark: names from the registry, options typed by each method's defaults (never
NaN), inputs the suite cannot give refused before any work, and the columns each method gets."""
import pytest

from vlmjudge.benchmark.methods import (apply_options, batch_columns, check_inputs, option_defaults, resolve_methods,
                                        typed_option)
from vlmjudge.benchmark.models import BenchmarkError
from vlmjudge.benchmark.suites import PromptSuite, SuitePrompt
from vlmjudge.registry import MethodSpec


def test_methods_resolve_by_name_or_module_spec():
    plans = resolve_methods(" terravis, viescore2 ,toy_method:SPEC")
    assert [p.name for p in plans] == ["terravis", "viescore2", "toyphoto"]
    assert [p.needs_judge for p in resolve_methods("terravis,regeneration")] == [True, False]


@pytest.mark.parametrize("text, words", [("terravis,nosuch", "no method 'nosuch'"), ("", "give method names"),
                                         ("terravis,,viescore2", "give method names"),
                                         ("terravis,terravis", "terravis is given twice"),
                                         ("nosuchmodule:SPEC", "cannot load")])
def test_bad_method_lists_are_one_line(text, words):
    with pytest.raises(BenchmarkError, match=words) as caught:
        resolve_methods(text)
    assert "\n" not in str(caught.value)


def test_options_are_typed_by_the_methods_own_defaults():
    plans = resolve_methods("terravis,viescore2,fager")
    apply_options(plans, ["terravis.variant=holistic", "terravis.lam=2", "terravis.severity_reasons=yes",
                          "terravis.retry_temperature=[0.3, 0.5]", "viescore2.grid_size=8",
                          "fager.regenerate_threshold=30", "fager.chunk_size=4"])
    assert plans[0].options == {"variant": "holistic", "lam": 2.0, "severity_reasons": True,
                                "retry_temperature": [0.3, 0.5]}
    assert plans[1].options == {"grid_size": 8}
    assert plans[2].options == {"regenerate_threshold": 30.0, "chunk_size": 4}  # fager's other keywords go to Fager
    assert isinstance(plans[0].options["lam"], float) and isinstance(plans[1].options["grid_size"], int)


@pytest.mark.parametrize("option, words", [
    ("terravis.lam=nan", "not a finite number"), ("terravis.alpha=inf", "not a finite number"),
    ("terravis.lam=-Infinity", "not a finite number"), ("fager.chunk_size=NaN", "not a finite number"),
    ("fager.chunk_size=[1, Infinity]", "not a finite number"), ("viescore2.grid_size=8.5", "expected a whole number"),
    ("terravis.severity_reasons=maybe", "expected true or false"), ("terravis.colour=red", "has no option 'colour'"),
    ("clip.model=x", "clip is not one of --methods"), ("terravis=holistic", "expected METHOD.KEY=VALUE"),
    ("terravis.variant", "expected METHOD.KEY=VALUE"),
])
def test_bad_options_are_one_line(option, words):
    plans = resolve_methods("terravis,viescore2,fager")
    with pytest.raises(BenchmarkError, match=words):
        apply_options(plans, [option])


def test_an_option_given_twice_and_python_options():
    plans = resolve_methods("terravis")
    with pytest.raises(BenchmarkError, match="given twice"):
        apply_options(plans, ["terravis.lam=2", "terravis.lam=3"])
    plans = resolve_methods("terravis")
    apply_options(plans, {"terravis": {"lam": 2.0, "variant": "holistic"}})
    assert plans[0].options == {"lam": 2.0, "variant": "holistic"}
    with pytest.raises(BenchmarkError, match="not a finite number"):
        apply_options(resolve_methods("terravis"), {"terravis": {"lam": float("nan")}})


def test_typed_option_without_a_default_reads_json_or_keeps_text():
    assert typed_option("3", None, "m.k") == 3 and typed_option("null", None, "m.k") is None
    assert typed_option("Qwen/Qwen3-VL", None, "m.k") == "Qwen/Qwen3-VL"
    assert typed_option('{"a": 1}', None, "m.k") == {"a": 1}


def test_defaults_come_from_the_spec_config_first():
    spec = MethodSpec(name="cfg", inputs=("image",), build=lambda judge, **kw: None, score_range=(0.0, 1.0),
                      render=lambda r: {}, config={"threshold": 0.5})
    assert option_defaults(spec) == ({"threshold": 0.5}, True)
    [plan] = resolve_methods([spec])
    apply_options([plan], ["cfg.threshold=0.75"])
    assert plan.options == {"threshold": 0.75}


SUITE = PromptSuite("plain", [SuitePrompt("a", "a cat"), SuitePrompt("b", "")])


@pytest.mark.parametrize("methods, words", [
    ("viescore2", "needs a prompt; suite 'plain' has none for b"),
    ("regeneration", "needs a reference image; suite 'plain' has none for a, b"),
])
def test_a_method_whose_inputs_the_suite_lacks_is_refused(methods, words):
    with pytest.raises(BenchmarkError, match=words):
        check_inputs(resolve_methods(methods), SUITE)


def test_a_method_needing_a_column_no_benchmark_gives_is_refused():
    spec = MethodSpec(name="needsqa", inputs=("image", "qa_set"), build=lambda judge: None, score_range=(0.0, 1.0),
                      render=lambda r: {})
    with pytest.raises(BenchmarkError, match="needsqa needs 'qa_set', which a benchmark cannot give"):
        check_inputs(resolve_methods([spec]), SUITE)
    check_inputs(resolve_methods("terravis"), SUITE)  # an image is all it needs


def test_batch_columns_give_what_each_method_reads():
    terravis, viescore2, regeneration, fager = (p.spec for p in resolve_methods("terravis,viescore2,regeneration,fager"))
    ids, images = ["a", "b"], ["img-a", "img-b"]
    assert batch_columns(terravis, ids, images, ["x", "y"], [None, None]) == {"image": images, "id": ids}
    assert batch_columns(viescore2, ids, images, ["x", "y"], [None, None]) == {"image": images, "prompt": ["x", "y"],
                                                                               "id": ids}
    assert batch_columns(regeneration, ids, images, ["", ""], ["r1", "r2"]) == {"reference": ["r1", "r2"],
                                                                                "generated": images, "id": ids}
    assert batch_columns(fager, ids, images, ["x", "y"], ["r1", None])["references"] == ["r1", None]
