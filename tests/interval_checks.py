"""Checks that a summary's mean comes with its 95% interval and n: the printed phrase
`0.7100 [0.6400, 0.7800] (n=48)` and the dicts and result keys that carry the same numbers."""
import math
import re

from vlmjudge.text import format_score

NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]\d+)?"
PHRASE = re.compile(rf"({NUMBER}) \[({NUMBER}), ({NUMBER})\] \(n=(\d+)\)")


def printed_interval(text: str, label: str) -> tuple[float, float, float, int]:
    """The mean, bounds and n printed right after `label` (e.g. "mean score ")."""
    found = re.search(re.escape(label) + r"\s*" + PHRASE.pattern, text)
    assert found, f"no '{label}MEAN [LOW, HIGH] (n=N)' in {text!r}"
    mean, low, high, n = found.groups()
    return float(mean), float(low), float(high), int(n)


def check_printed(text: str, label: str, values) -> tuple[float, float, float, int]:
    """The phrase after `label` holds the mean of `values` (None left out) as every score is printed
    (`format_score`: four significant digits), bounds around it and n the number of values averaged."""
    found = re.search(re.escape(label) + r"\s*" + PHRASE.pattern, text)
    assert found, f"no '{label}MEAN [LOW, HIGH] (n=N)' in {text!r}"
    mean, low, high, n = printed_interval(text, label)
    kept = [v for v in values if v is not None]
    assert n == len(kept)
    assert found.group(1) == format_score(math.fsum(kept) / len(kept))
    assert all(part == format_score(float(part)) for part in found.groups()[:3])  # every number by one rule
    assert low <= mean <= high
    return mean, low, high, n


def check_summary(summary: dict, values, abs_tol: float = 0.0) -> None:
    """A `mean_with_interval` dict: the mean of `values` (None and NaN left out), bounds around
    it (None under two values), n the number averaged. The mean is compared to 1e-12 relative
    (the summation order may differ); values from another run that batched the model's forwards
    differently agree only to the API's tolerance, which `abs_tol` gives."""
    kept = [float(v) for v in values if v is not None and not math.isnan(v)]
    assert summary["n"] == len(kept)
    if not kept:
        assert summary["mean"] is None and summary["low"] is None and summary["high"] is None
        return
    assert math.isclose(summary["mean"], math.fsum(kept) / len(kept), rel_tol=1e-12, abs_tol=abs_tol)
    if len(kept) < 2:
        assert summary["low"] is None and summary["high"] is None
    else:
        assert summary["low"] <= summary["mean"] <= summary["high"]
        if min(kept) == max(kept):
            assert summary["low"] == summary["high"] == summary["mean"]
        else:
            assert summary["low"] < summary["high"]


def check_result_keys(result: dict, name: str, values, abs_tol: float = 0.0) -> None:
    """An evaluate result's `<name>`, `<name>_ci` ([low, high] or None) and `<name>_n`."""
    check_summary({"mean": result[name], "low": None if result[f"{name}_ci"] is None else result[f"{name}_ci"][0],
                   "high": None if result[f"{name}_ci"] is None else result[f"{name}_ci"][1],
                   "n": result[f"{name}_n"]}, values, abs_tol)
