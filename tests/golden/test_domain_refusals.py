"""Out-of-domain parameters are a tabled deviation: the library's refusal is the expected outcome.

Cases are built from the first computed case of each vendored corpus with one parameter pushed out of its
documented domain (`lam = 0`, `alpha = 1.5`, `mark_threshold = 0`, a human score of 1.04, ...). Each
must be classified as an expected refusal (an xfail whose reason says so), while an in-domain case
whose result differs is still a failure, and a library that computed a number out of domain fails too.
No test here is parametrized: the fidelity table counts parametrized golden cases only.
"""
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from . import test_fager, test_regeneration, test_terravis, test_viescore2_evaluation, test_viescore2_parsing
from .deviations import deviation_for
from .replay import DEFAULT_DIR, cases, decode_array, replay

REPO = Path(__file__).resolve().parents[2]


def template(corpus: str, where=lambda case: True) -> dict:
    """The first case of a vendored corpus where the release computed a result (not an error), and
    `where(case)` holds."""
    with (DEFAULT_DIR / f"{corpus}.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            case = json.loads(line)
            if set(case["expected"]) != {"error"} and where(case):
                return case
    raise AssertionError(f"{corpus} has no case with a result")


def pushed(corpus: str, **changes) -> dict:
    """The corpus' first case with `changes` in its input and a new id."""
    case = template(corpus)
    case["input"] = {**case["input"], **changes}
    case["id"] = f"{case['id']}+{'+'.join(f'{k}={v}' for k, v in changes.items())}"
    return case


#: (corpus, the adapter its golden test uses, out-of-domain changes to its first case)
OUT_OF_DOMAIN = [
    ("terravis/score_formula", lambda inp: {"score": test_terravis.scoring.score_from_counts(
        inp["n_major"], inp["n_minor"], lam=inp["lambda"], alpha=inp["alpha"])},
     [{"lambda": 0}, {"lambda": -0.5}, {"alpha": 1.5}, {"alpha": -0.1}, {"n_major": -1}]),
    ("terravis/workflow", test_terravis.workflow_result, [{"lambda": 0.0}, {"alpha": 1.5}]),
    ("viescore2/heatmap_grids", test_viescore2_evaluation.heatmap_grids,
     [{"major_threshold": 0}, {"major_threshold": 1.5}, {"grid_size": 0}]),
    ("viescore2/make_target", test_viescore2_parsing.make_target, [{"score": 1.04, "axis_scores": None},
                                                                  {"axis_scores": [1.04, 0.5]}]),
    ("viescore2/weighted_fbeta", test_viescore2_parsing.weighted_fbeta, [{"beta": 0}, {"beta": -1.0}]),
    ("fager/score_image", test_fager._score_image, [{"keep_threshold": 101.0}, {"regenerate_threshold": 96.0}]),
    ("fager/ab_test", test_fager._ab_test, [{"tie_mode": "half"}]),
    ("regeneration/select_candidate", test_regeneration._selection, [{"rounds": [[{"clip": 0.5, "dinov2": 0.5}], []]}]),
]


def outcome(corpus: str, case: dict, compute) -> tuple[str, str]:
    """("pass" | "xfail" | "fail", message) of replaying one case."""
    try:
        replay(corpus, case, compute)
    except pytest.xfail.Exception as xfailed:
        return "xfail", str(xfailed)
    except pytest.fail.Exception as failed:
        return "fail", str(failed)
    return "pass", ""


def test_every_out_of_domain_parameter_is_an_expected_refusal():
    checked = 0
    for corpus, compute, pushes in OUT_OF_DOMAIN:
        for changes in pushes:
            case = pushed(corpus, **changes)
            row = deviation_for(corpus, case["input"])
            assert row is not None and row.refuses, (corpus, changes)
            result, message = outcome(corpus, case, compute)
            assert result == "xfail" and "expected refusal" in message, (corpus, changes, result, message)
            checked += 1
    assert checked == sum(len(p) for _, _, p in OUT_OF_DOMAIN)


def test_an_in_domain_case_that_differs_is_still_a_failure():
    case = template("terravis/score_formula")
    assert deviation_for("terravis/score_formula", case["input"]) is None
    case["expected"] = {"score": case["expected"]["score"] + 0.01}
    compute = OUT_OF_DOMAIN[0][1]
    result, message = outcome("terravis/score_formula", case, compute)
    assert result == "fail" and "differs from the release" in message
    inside = pushed("terravis/score_formula", **{"lambda": 1e-9, "alpha": 1.0})  # the domain's edges
    assert deviation_for("terravis/score_formula", inside["input"]) is None


def test_an_in_domain_case_that_raises_is_an_error_not_a_refusal():
    case = template("terravis/score_formula")

    def broken(inp):
        raise ValueError("a bug, not a refusal")

    with pytest.raises(ValueError, match="a bug"):
        replay("terravis/score_formula", case, broken)


def test_a_number_computed_out_of_domain_is_a_failure():
    """Were the library to stop refusing lam = 0, the case would fail rather than pass unnoticed."""
    case = pushed("terravis/score_formula", **{"lambda": 0})
    result, message = outcome("terravis/score_formula", case, lambda inp: {"score": 1.0})
    assert result == "fail" and "outside the documented domain" in message


def test_a_refusal_where_the_release_raised_too_is_a_pass():
    case = pushed("terravis/score_formula", **{"lambda": 0})
    case["expected"] = {"error": "ZeroDivisionError"}
    assert outcome("terravis/score_formula", case, OUT_OF_DOMAIN[0][1]) == ("pass", "")


def test_a_temporary_corpus_under_golden_dir_replays_through_the_real_tests(tmp_path, monkeypatch):
    """GOLDEN_DIR pointed at a small corpus: two refusals, one in-domain match and one in-domain
    difference through tests/golden/test_terravis.py, as the held-back split would run."""
    good = template("terravis/score_formula")
    wrong = {**template("terravis/score_formula"), "id": "tv.score_formula.tmp.wrong"}
    wrong["expected"] = {"score": good["expected"]["score"] / 2}
    lines = [good, pushed("terravis/score_formula", **{"lambda": 0}),
             pushed("terravis/score_formula", alpha=1.5), wrong]
    (tmp_path / "terravis").mkdir()
    (tmp_path / "terravis" / "score_formula.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lines))
    monkeypatch.setenv("GOLDEN_DIR", str(tmp_path))
    assert [p.id for p in cases("terravis/score_formula")] == [c["id"] for c in lines]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rxf",
                           "tests/golden/test_terravis.py::test_score_formula"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert "1 failed, 1 passed, 2 xfailed" in done.stdout, done.stdout[-2000:]
    assert done.stdout.count("expected refusal") == 2 and "tv.score_formula.tmp.wrong differs" in done.stdout


def test_make_target_s_domain_rule_looks_at_the_scores_it_writes():
    """With axis scores given, the overall score is unused (by the release and the library): one out of
    [0, 1] there is in domain, and the library's target is the release's."""
    axes = template("viescore2/make_target", lambda c: (c["input"]["axis_scores"] or [None])[0] is not None)
    case = pushed("viescore2/make_target", score=1.04, axis_scores=axes["input"]["axis_scores"],
                  flat_cells=axes["input"]["flat_cells"], channels=axes["input"]["channels"])
    case["expected"] = axes["expected"]
    assert deviation_for("viescore2/make_target", case["input"]) is None
    assert outcome("viescore2/make_target", case, test_viescore2_parsing.make_target) == ("pass", "")
    for unused_axes in (None, [None, 0.5]):  # no axis score given first: the overall score is written
        assert deviation_for("viescore2/make_target", {**case["input"], "axis_scores": unused_axes}).refuses


def _encoded(array: np.ndarray) -> dict:
    """A corpus array (`{"dtype", "shape", "b64"}`) of a float array, stored as float16 as the corpus does."""
    values = np.ascontiguousarray(array, dtype="<f2")
    return {"dtype": "float16", "shape": list(values.shape), "b64": base64.b64encode(values.tobytes()).decode()}


def test_a_map_array_that_is_not_one_plane_is_a_tabled_refusal_and_a_singleton_channel_a_deviation(tmp_path):
    """The release returns an empty grid for any array that is not 2-D (`arr.ndim != 2`); the library
    refuses a 3-channel float mask and reads a (H, W, 1) one as its plane. Both are table rows."""
    flat = template("viescore2/gt_grid", lambda c: c["input"]["data_form"] == "array" and c["expected"]["cells"])
    plane = decode_array(flat["input"]["array"]).astype(float)
    compute = lambda inp: test_viescore2_evaluation.gt_grid(inp, tmp_path)  # noqa: E731
    for stacked, result, words in ((np.stack([plane] * 3, axis=-1), "xfail", "expected refusal"),
                                   (plane[..., None], "xfail", "documented deviation"),
                                   (plane[None], "xfail", "documented deviation")):
        case = {**flat, "id": f"{flat['id']}+shape={stacked.shape}",
                "input": {**flat["input"], "array": _encoded(stacked)}, "expected": {"cells": []}}
        assert deviation_for("viescore2/gt_grid", case["input"]) is not None
        found, message = outcome("viescore2/gt_grid", case, compute)
        assert found == result and words in message and "not 2-D" in message, (stacked.shape, found, message)
    assert deviation_for("viescore2/gt_grid", flat["input"]) is None  # a 2-D array is no deviation
