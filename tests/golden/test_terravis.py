"""TerraVis against its release (ShyFoo/TerraVis): one test per corpus line of tests/data/golden/terravis.

Each adapter calls the project's public functions and only renames their results into the release's
schema (tests/data/golden/README.md): None / "n/a" for a missing score, "" for an absent field.
"""
import pytest

from terravis import TYPE_IDS, answers, scoring
from terravis.saved_runs import record_from_raw_answers

from .replay import cases, number, replay

FIELDS = {"reason": "Reason", "affected_aspect": "Affected aspect", "evidence": "Evidence"}


def read_answer(raw, reader, fields):
    """The parsed decision, whether the answer is empty, and the fields the workflow extracts."""
    out = {"parsed": reader(raw), "empty": raw == ""}
    out.update({key: answers.read_field(raw, FIELDS[key]) for key in fields})
    return out


@pytest.mark.parametrize("case", cases("terravis/parse_eligibility"))
def test_parse_eligibility(case):
    replay("terravis/parse_eligibility", case,
           lambda inp: read_answer(inp["raw"], answers.read_eligibility, ["reason"]))


@pytest.mark.parametrize("case", cases("terravis/parse_detection"))
def test_parse_detection(case):
    replay("terravis/parse_detection", case,
           lambda inp: read_answer(inp["raw"], answers.read_detection, ["affected_aspect", "evidence"]))


def severity_answer(raw):
    """The severity read, and the one the workflow scores with (a detected violation: see the record)."""
    out = read_answer(raw, answers.read_severity, ["reason"])
    check = record_from_raw_answers("Answer: Yes", ["Answer: Yes"], [raw]).checks[0]
    out["severity"] = check.severity
    return out


@pytest.mark.parametrize("case", cases("terravis/parse_severity"))
def test_parse_severity(case):
    replay("terravis/parse_severity", case, lambda inp: severity_answer(inp["raw"]))


@pytest.mark.parametrize("case", cases("terravis/extract_field"))
def test_extract_field(case):
    replay("terravis/extract_field", case,
           lambda inp: {"value": answers.read_field(inp["text"], inp["field"])})


def workflow_result(inp):
    """The release's result dict, from the project's record of the same raw answers."""
    weights = {"lam": inp["lambda"]} if "lambda" in inp else {}
    if "alpha" in inp:
        weights["alpha"] = inp["alpha"]
    n = len(inp["detection_raw"])  # a question list longer than the taxonomy gets its own names
    names = None if n <= len(TYPE_IDS) else [f"question {i + 1}" for i in range(n)]
    record = record_from_raw_answers(inp["eligibility_raw"], inp["detection_raw"], inp["severity_raw"],
                                     keep_ineligible_details=inp["keep_ineligible_details"], type_ids=names,
                                     **weights)
    valid = record.eligibility_parse_ok and record.eligible is not None
    return {
        "score": "n/a" if record.score is None else record.score,
        "num_major_violations": record.n_major, "num_minor_violations": record.n_minor,
        "lambda": record.lam, "alpha": record.alpha,
        "eligibility": {"is_eligible": record.eligible if valid else None, "valid_output": valid,
                        "reason": record.eligibility_reason or ""},
        "detections": [{"detected": c.detected if c.parse_ok else None, "valid_detection_output": c.parse_ok,
                        "severity": c.severity if c.detected else "",
                        "valid_severity_output": c.severity_parse_ok if c.detected else None}
                       for c in record.checks],
    }


@pytest.mark.parametrize("case", cases("terravis/workflow"))
def test_workflow(case):
    replay("terravis/workflow", case, workflow_result)


@pytest.mark.parametrize("case", cases("terravis/score_formula"))
def test_score_formula(case):
    """S = exp(-lambda (N_major + alpha N_minor)), as the release computes it."""
    replay("terravis/score_formula", case, lambda inp: {"score": scoring.score_from_counts(
        inp["n_major"], inp["n_minor"], lam=inp["lambda"], alpha=inp["alpha"])})


def mean_result(inp):
    """The release prints the mean with four decimals, or "n/a" when no image has a score."""
    scores = [None if s == "n/a" else number(s) for s in inp["scores"]]
    mean, n = scoring.mean_and_count(scores)
    return {"mean": "n/a" if mean is None else f"{mean:.4f}", "n": n}


@pytest.mark.parametrize("case", cases("terravis/mean_score"))
def test_mean_score(case):
    replay("terravis/mean_score", case, mean_result)
