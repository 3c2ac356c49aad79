"""The evaluate module metrics/viescore2 loads offline from its folder and returns the suite metrics."""
import ast
from pathlib import Path

import pytest

from viescore2.evaluation import Reference, evaluate_suite

FOLDER = Path(__file__).resolve().parents[2] / "metrics" / "viescore2"
KEYS = ("grid", "artifact", "misalign", "score", "pq", "sc")


def record(**kw):
    return {k: kw.get(k) for k in KEYS}


@pytest.fixture
def metric(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import evaluate
    return evaluate.load(str(FOLDER), "evaluation")


def test_folder_layout():
    script = FOLDER / "viescore2.py"
    classes = [n for n in ast.parse(script.read_text()).body if isinstance(n, ast.ClassDef)
               and any(getattr(b, "attr", None) == "Metric" for b in n.bases)]
    assert len(classes) == 1
    card = (FOLDER / "README.md").read_text()
    assert card.startswith("---\n") and "sdk: gradio" in card and "app_file: app.py" in card
    for fact in ("0.601", "0.299", "0.335", "0.5"):
        assert fact in card
    assert (FOLDER / "requirements.txt").read_text().strip()


def test_compute_offline_without_a_model(metric):
    predictions = ["score: 2/10\nr5: 9", "score: 8/10\nnone", "pq: 6/10\nsc: 6/10\nartifact:\nr1: 1\nmisalign:\nnone",
                   "garbage"]
    references = [record(grid="r5: 8,9!", score=3.0), record(grid="none", score=9.0),
                  record(artifact="r1: 1!", misalign="r2: 2", pq=5.0, sc=7.0), record(score=4.0)]
    out = metric.compute(predictions=predictions, references=references)
    expected = evaluate_suite(predictions, [Reference.from_record(r) for r in references])
    assert out == expected
    assert out["tp"] == 2 and out["fn"] == 2 and out["micro_f1"] == pytest.approx(2 / 3)
    assert out["grid_iou"] == pytest.approx((1 / 2 + 1 / 2) / 2)
    assert out["misalign_fn"] == 1 and out["srcc_overall_pairs"] == 3 and out["srcc_overall_total"] == 4


def test_docstring_example(metric):
    """Every example runs (none skipped), `evaluate.load` by bare name resolving to this folder."""
    import doctest
    import importlib.util
    import types

    import evaluate
    spec = importlib.util.spec_from_file_location("viescore2_metric_script", FOLDER / "viescore2.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    local = types.SimpleNamespace(load=lambda name, *args, **kw: evaluate.load(str(FOLDER.parent / name), *args, **kw))
    test = doctest.DocTestParser().get_doctest(script._KWARGS_DESCRIPTION, {"evaluate": local}, "example", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert "+SKIP" not in script._KWARGS_DESCRIPTION
    assert runner.summarize(verbose=False).failed == 0 and len(test.examples) >= 4


def test_bad_reference_is_a_clear_error(metric):
    with pytest.raises(ValueError, match="grid"):
        metric.compute(predictions=["none"], references=[record(grid="r1: one")])
