"""How small a difference a run can resolve, and how many items a wanted resolution needs.

Both use the normal approximation to the test of a mean difference, (z_alpha + z_power) * sd /
sqrt(n): close to the t-test and the permutation test once n is a few dozen, optimistic below.
Plan with it before generating images; test the finished runs with the permutation test.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy.special import ndtri


def _z_sum(alpha: float, power: float, alternative: str) -> float:
    """z of the significance level (halved when two-sided) plus z of the power."""
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError("alpha and power must lie in (0, 1)")
    if alternative not in ("two-sided", "one-sided"):
        raise ValueError(f"alternative must be 'two-sided' or 'one-sided', not {alternative!r}")
    level = alpha / 2 if alternative == "two-sided" else alpha
    return float(ndtri(1 - level) + ndtri(power))


def minimum_detectable_effect(values_or_diffs: Sequence[float], n: int | None = None, alpha: float = 0.05,
                              power: float = 0.8, paired: bool = True, alternative: str = "two-sided") -> float:
    """Smallest true difference a run of n items detects with the given power (normal approximation).

    paired=True: values are per-item differences b - a of a pilot comparison.
    paired=False: values are one run's per-item scores; the other run is taken to have the same
    spread and n items of its own (two independent samples).
    None and NaN are dropped; n defaults to the number of values left.
    """
    x = np.array([v for v in values_or_diffs if v is not None], dtype=float)
    x = x[~np.isnan(x)]
    if len(x) < 2:
        raise ValueError("needs at least two values to estimate their spread")
    n = len(x) if n is None else n
    sd = float(np.std(x, ddof=1))
    scale = 1.0 if paired else math.sqrt(2.0)
    return _z_sum(alpha, power, alternative) * sd * scale / math.sqrt(n)


def required_n(effect: float, sd: float, alpha: float = 0.05, power: float = 0.8, paired: bool = True,
               alternative: str = "two-sided") -> int:
    """Items needed (per run) so that a true difference `effect` is detected with the given power.

    sd is the spread of the per-item differences when paired, of one run's scores when not
    (normal approximation, as minimum_detectable_effect, whose inverse this is).
    """
    if effect == 0 or sd < 0:
        raise ValueError("effect must be non-zero and sd non-negative")
    scale = 1.0 if paired else 2.0
    exact = scale * (_z_sum(alpha, power, alternative) * sd / abs(effect)) ** 2
    return max(1, math.ceil(exact - 1e-9))
