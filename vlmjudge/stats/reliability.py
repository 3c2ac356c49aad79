"""What a comparison's numbers cannot show by themselves, said beside them: too few items for an
interval or a test, runs whose values rest on different numbers of items, and an interval that
disagrees with its p-value.

A leaderboard that ranks a run scored on 2 of 5 items above runs scored on all 5 misleads without
a word; so does a 95% interval that excludes 0 beside p = 0.25. Each rule here turns such a case
into a sentence (and a JSON field), so no reader of the table, the JSON or the page misses it.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from vlmjudge.stats.swap import EXACT_BELOW

#: What a row or a pair on fewer than `EXACT_BELOW` items says.
SMALL_N_NOTE = (f"under {EXACT_BELOW} paired items: intervals and p-values are unreliable "
                f"(the p-value is the exact sign-flip test over all 2^n swaps)")


def unreliable(n: int) -> bool:
    """Whether n items are too few for a trustworthy interval or p-value."""
    return n < EXACT_BELOW


def unscored_warnings(board: Sequence[Mapping], statistic: str) -> list[str]:
    """One line per run whose unscored count (`n_unscored` of `n_items`) differs from the fewest
    any run has: its value rests on fewer items than the others'. Empty when all runs match."""
    if len({row["n_unscored"] for row in board}) <= 1:
        return []
    fewest = min(row["n_unscored"] for row in board)
    others = sorted({row["n"] for row in board if row["n_unscored"] == fewest})
    over = " or ".join(str(n) for n in others)
    return [f"run {row['label']}: {row['n_unscored']} of {row['n_items']} items N/A, failed or absent; its "
            f"{statistic} is over {row['n']} item{'s' * (row['n'] != 1)}, the others' over {over}"
            for row in board if row["n_unscored"] != fewest]


def consistency_note(entry: Mapping, confidence: float) -> str | None:
    """The one sentence that explains a pair whose interval and two-sided p-value disagree at level
    1 - confidence (both on the same paired items, both two-sided); None when they agree."""
    low, high, p = entry.get("low"), entry.get("high"), entry.get("p_value")
    if p is None or low is None or high is None or not all(map(math.isfinite, (low, high, p))):
        return None
    excludes, significant = low > 0 or high < 0, p < 1 - confidence
    if excludes == significant:
        return None
    level = f"{1 - confidence:.2g}"
    if excludes:
        return (f"the bootstrap interval excludes 0 but p = {p:.3g} is not below {level}: the bootstrap only "
                f"redraws the {entry['n']} observed differences, so it cannot show a sign they lack, while the "
                "swap test asks how often chance alone gives a difference this large; trust the test")
    return (f"p = {p:.3g} is below {level} but the bootstrap interval includes 0: the test draws under no "
            "difference and the interval around the observed one, so near the threshold they can part; "
            "read the difference as borderline")
