"""The resampling settings every interval here takes (resamples, seed, confidence), checked by one rule.

Why one checker: `compare_runs`, `vlmjudge compare`, `vlmjudge agreement` and the benchmark
leaderboard take the same three settings; each raises its own error class with the message this
writes, so what they accept cannot drift apart.
"""
from __future__ import annotations

from typing import Any

#: The names a library call gives the settings (a command passes its flags' names).
SETTING_NAMES = ("n_resamples", "seed", "confidence")


def resampling_problem(n_resamples: Any, seed: Any, confidence: Any, *, most: int,
                       names: tuple[str, str, str] = SETTING_NAMES) -> str | None:
    """What is wrong with the settings, in one line, or None when they can be used: resamples a
    whole number in 1..`most`, seed a whole number of at least 0, confidence strictly inside (0, 1).

    Examples:
        >>> resampling_problem(2000, 0, 0.95, most=100_000) is None
        True
        >>> resampling_problem(True, 0, 0.95, most=10)
        'n_resamples must lie in 1..10 (a whole number; time grows with it), got True'
        >>> resampling_problem(5, 0, float("nan"), most=10, names=("--resamples", "--seed", "--confidence"))
        '--confidence must lie strictly between 0 and 1, got nan'
    """
    resamples_name, seed_name, confidence_name = names
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or not 1 <= n_resamples <= most:
        return f"{resamples_name} must lie in 1..{most} (a whole number; time grows with it), got {n_resamples!r}"
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        return f"{seed_name} must be a whole number of at least 0, got {seed!r}"
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        return f"{confidence_name} must lie strictly between 0 and 1, got {confidence!r}"
    return None
