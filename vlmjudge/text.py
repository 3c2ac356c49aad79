"""Small text helpers the methods' answer parsers share, kept free of any method's rules."""
from __future__ import annotations

__all__ = ["remove_spans"]


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
