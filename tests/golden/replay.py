"""Replaying the releases' golden corpora: loading, decoding, comparing, and the verdict of one case.

Every corpus line is `{"id", "input", "expected"[, "release_bug", "note"]}` (tests/data/golden/README.md).
A test file per method parametrizes one pytest case per line with `cases(corpus)` and hands each case to
`replay(corpus, case, compute)` (`golden_test(corpus, compute, doc)` writes that test), where
`compute(input)` runs the project's own public function(s) and returns the release's schema. The verdict:

- equal to `expected` (floats within 1e-9): pass;
- different, and the line carries `release_bug`: xfail with the line's note (the project follows the paper);
- different, and a row of `deviations.DEVIATIONS` matches the input: xfail with that row's reason;
- different otherwise: fail, showing the first differing path.

An input outside the documented domain (a refusal row matches it) expects the library's documented
error, raised (`ValueError`) or returned by the adapter as `{"error": ...}`: that is an xfail with the
row's reason (a pass where the release raised too); a number computed there is a failure.

Cases are never recognised by id: a deviation is a rule on the input, so another corpus of the same kind
(`GOLDEN_DIR=...`, other seeds) runs under the same tests.
"""
from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from .deviations import deviation_for

DEFAULT_DIR = Path(__file__).resolve().parents[1] / "data" / "golden"
TOLERANCE = 1e-9
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def golden_dir() -> Path:
    """The corpus folder: `GOLDEN_DIR` from the environment, else the vendored copy."""
    return Path(os.environ.get("GOLDEN_DIR") or DEFAULT_DIR)


def cases(corpus: str) -> list:
    """One `pytest.param` per line of `<corpus>.jsonl`, with the line's id as the test id."""
    path = golden_dir() / f"{corpus}.jsonl"
    if not path.is_file():
        return [pytest.param(None, id=f"{corpus}-missing",
                             marks=pytest.mark.skip(reason=f"no corpus file {path}"))]
    params = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                case = json.loads(line)
                params.append(pytest.param(case, id=case["id"]))
    return params


def decode_array(spec: dict | None) -> np.ndarray | None:
    """A corpus array (`{"dtype", "shape", "b64"}`: raw little-endian C-order bytes) as numpy."""
    if spec is None:
        return None
    dtype = {"uint8": "u1", "float16": "<f2"}[spec["dtype"]]
    return np.frombuffer(base64.b64decode(spec["b64"]), dtype=dtype).reshape(spec["shape"])


def number(value):
    """A corpus number: the strings "NaN", "Infinity", "-Infinity" become floats; others pass through."""
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    return value


def first_difference(actual, expected, path: str = "$") -> str | None:
    """The path and values of the first difference, or None when equal (floats within TOLERANCE).

    An expected `{"error": X}` is matched by any `{"error": Y}`: raising the project's documented error
    where the release raised counts as a match, whatever the exception class.
    """
    expected = number(expected)
    actual = number(actual)
    if isinstance(expected, dict) and set(expected) == {"error"}:
        if isinstance(actual, dict) and set(actual) == {"error"}:
            return None
        return f"{path}: expected an error ({expected['error']}), got {actual!r}"
    if isinstance(expected, bool) or isinstance(actual, bool):
        return None if actual is expected else f"{path}: expected {expected!r}, got {actual!r}"
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        if math.isnan(expected) or math.isnan(actual):
            same = math.isnan(expected) and math.isnan(actual)
        else:
            same = math.isclose(actual, expected, rel_tol=0.0, abs_tol=TOLERANCE) or actual == expected
        return None if same else f"{path}: expected {expected!r}, got {actual!r}"
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {actual!r}"
        if set(actual) != set(expected):
            return (f"{path}: keys differ: missing {sorted(set(expected) - set(actual))}, "
                    f"extra {sorted(set(actual) - set(expected))}")
        for key in expected:
            found = first_difference(actual[key], expected[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return f"{path}: expected {expected!r}, got {actual!r}"
        for index, (got, want) in enumerate(zip(actual, expected)):
            found = first_difference(got, want, f"{path}[{index}]")
            if found:
                return found
        return None
    return None if actual == expected else f"{path}: expected {expected!r}, got {actual!r}"


def replay(corpus: str, case: dict, compute) -> None:
    """Run `compute(case["input"])` and pass, xfail (release bug or tabled deviation) or fail."""
    deviation = deviation_for(corpus, case["input"])
    if deviation is not None and deviation.refuses:
        _replay_refusal(case, compute, deviation)
        return
    actual = compute(case["input"])
    difference = first_difference(actual, case["expected"])
    if difference is None:
        return
    if case.get("release_bug"):
        pytest.xfail(f"release bug, the project follows the paper: {case.get('note', '')}")
    if deviation is not None:
        pytest.xfail(f"documented deviation: {deviation.reason}")
    pytest.fail(f"{case['id']} differs from the release: {difference}", pytrace=False)


def _replay_refusal(case: dict, compute, deviation) -> None:
    """An out-of-domain input: the library's documented error is the expected outcome (a pass when the
    release raised too, else an xfail with the row's reason); anything else it returns is a failure."""
    try:
        actual = compute(case["input"])
    except ValueError as error:  # the documented error (pydantic's ValidationError is one)
        actual = {"error": type(error).__name__}
    refused = isinstance(actual, dict) and set(actual) == {"error"}
    if refused and first_difference(actual, case["expected"]) is None:
        return
    if refused:
        pytest.xfail(f"documented deviation, expected refusal: {deviation.reason}")
    pytest.fail(f"{case['id']} is outside the documented domain ({deviation.reason}), yet the library "
                f"computed {actual!r}", pytrace=False)


def golden_test(corpus: str, compute, doc: str):
    """The test of one corpus: a pytest case per line, each replayed through `compute`. Assign it
    to a `test_...` name in a test module; `doc` says what the corpus checks."""
    @pytest.mark.parametrize("case", cases(corpus))
    def test(case):
        replay(corpus, case, compute)
    test.__doc__ = doc
    return test
