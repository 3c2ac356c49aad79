"""Element-by-element closeness of nested lists and dicts: pytest 9 refuses `approx` on nested data."""
import math


def assert_nested_close(actual, expected, abs_tol: float = 1e-9, path: str = "$") -> None:
    """Same keys, lengths and non-numeric values; numbers within `abs_tol` (NaN equals NaN)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected a dict, got {actual!r}"
        assert actual.keys() == expected.keys(), f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            assert_nested_close(actual[key], expected[key], abs_tol, f"{path}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), \
            f"{path}: expected {len(expected)} items, got {actual!r}"
        for index, (got, want) in enumerate(zip(actual, expected)):
            assert_nested_close(got, want, abs_tol, f"{path}[{index}]")
    elif isinstance(expected, (int, float)) and not isinstance(expected, bool) and actual is not None:
        both_nan = isinstance(actual, float) and math.isnan(actual) and math.isnan(expected)
        assert both_nan or abs(actual - expected) <= abs_tol, f"{path}: {actual!r} != {expected!r} (abs {abs_tol})"
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
