"""Small text helpers the whole suite shares, kept free of any method's rules: how a score is
printed (every console line, leaderboard and report table alike) and what answer parsers strip."""
from __future__ import annotations

import math
import numbers

__all__ = ["SCORE_DIGITS", "format_score", "remove_spans"]

#: Significant digits of every score, mean and interval bound the suite prints or tabulates.
SCORE_DIGITS = 4


def format_score(value: float | None, digits: int = SCORE_DIGITS) -> str:
    """A score as every line and table of the suite prints it: `digits` significant digits, trailing
    zeros kept so the digits of a column line up (0.5000 beside 0.8123); whole numbers from
    10**digits on without an exponent; below 1e-4 in exponent form, so a small TerraVis score stays
    visible; -0.0 as 0; None and NaN as "n/a".

    Why one rule: a run printed "0.812" on the console, "0.8123" on the leaderboard and "0.81" in
    its report reads as three different numbers.

    Examples:
        >>> [format_score(v) for v in (0.81234, 7.5, 100.0, 0.000123, 1.2e-05, -0.0, 12345.6, None)]
        ['0.8123', '7.500', '100.0', '0.0001230', '1.200e-05', '0.000', '12346', 'n/a']
        >>> format_score(float("nan")), format_score(float("-inf")), format_score(2, digits=2)
        ('n/a', '-inf', '2.0')
    """
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"format_score takes a number or None, got {type(value).__name__}")
    value = float(value) + 0.0  # + 0.0 turns -0.0 into 0.0
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if abs(value) >= 10 ** digits:
        return f"{value:.0f}"
    return f"{value:#.{digits}g}"


def remove_spans(text: str, opening: str, closing: str) -> str:
    """The text without its `opening ... closing` spans, read left to right (spans do not nest).

    An opening with no closing after it ends the scan: it and everything after it stay as
    text, since no later span could close either. Reading a VLM's answer, this drops reasoning
    blocks (`<think>...</think>`) or bracketed asides while a cut-off block is kept, not lost.

    Examples:
        >>> remove_spans("<think>The cup looks blue.</think>no", "<think>", "</think>")
        'no'
        >>> remove_spans("r1: 2 [3,4] r2: 5 [6", "[", "]")
        'r1: 2  r2: 5 [6'
        >>> remove_spans("a ]b[ c] d", "[", "]")
        'a ]b d'
        >>> remove_spans("text", "", "]")
        Traceback (most recent call last):
        ...
        ValueError: remove_spans needs a non-empty opening and closing, got '' and ']'
    """
    if not opening or not closing:
        raise ValueError(f"remove_spans needs a non-empty opening and closing, got {opening!r} and {closing!r}")
    parts, at = [], 0
    while True:
        start = text.find(opening, at)
        end = text.find(closing, start + len(opening)) if start >= 0 else -1
        if end < 0:
            parts.append(text[at:])
            return "".join(parts)
        parts.append(text[at:start])
        at = end + len(closing)
