"""The tolerant reading of judge text, as the public release (VIEScoreTwo ``run_eval.py``) reads it.

This module only scans text; `viescore2.grid.parse_output` turns a `Reading` into grids. The rules:

- **Union grid.** ``[..]`` groups and every ``!`` are removed, then every ``<row> : <columns>``
  in a line is read, wherever it stands in the line (``r5: 8,9``, ``row 5: 8 9``, ``5: 8;``,
  ``- r5: 8,9.``); columns are the numbers of a list of digits, commas and spaces. A cell counts
  only when both indices are in 1..N. At least one cell: the grid is read. No cell but the word
  ``none`` somewhere: a clean grid. Otherwise: a parse failure. So ``r17: 1`` alone fails, and a
  markdown row ``**r7**: 15`` (the colon does not follow the row number) is not a row.
- **Category sections.** A line holding only ``artifact:`` or ``misalign:`` opens a section that
  runs to the next such line; its rows are read the same way, with ``!`` after a column marking
  a high-coverage cell. A repeated header replaces the earlier section, as in the release.
- **Scores.** The first ``score|pq|sc : <number> / 10`` of each label, the number written with
  one or two digits before an optional decimal part; a value outside 0..10 leaves that score unread.

Where the release has a known bug, this reader follows the paper instead: rows and columns are
whole numbers (``r5: 123`` is column 123, out of range, not columns 12 and 3), a row never
continues on the next line, ``score`` needs a word boundary, and ``/10`` must not be followed by
a digit (``7/100`` is not 7/10). Every pattern is matched so that the scan is linear in the
length of the text, and no number is converted unless it has at most three digits.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

SCORE_KEYS = ("score", "pq", "sc")

# A row starts at the first digit of a number (never inside one, so the scan stays linear) and
# never crosses a line break: `_SPACE` is any white space but the newline.
_SPACE = r"[^\S\n]"
_UNION_ROW = re.compile(rf"(?<!\d)(\d+){_SPACE}*:{_SPACE}*([0-9](?:[0-9,]|{_SPACE})*)")
_MARKED_ROW = re.compile(rf"(?<!\d)(\d+){_SPACE}*:{_SPACE}*([0-9](?:[0-9,!]|{_SPACE})*)")
_COLUMN = re.compile(r"(\d+)(!?)")
_HEADER = re.compile(r"^[ \t]*(artifact|misalign)[ \t]*:[ \t]*$", re.IGNORECASE | re.MULTILINE)
_NONE = re.compile(r"\bnone\b", re.IGNORECASE)
# One or two digits, as the release reads them: "score: 123/10" is no match, so a later score is read.
_SCORE = re.compile(r"\b(score|pq|sc)\s*:\s*(\d{1,2}(?:\.\d+)?)\s*/\s*10(?!\d)", re.IGNORECASE)


def index_value(digits: str) -> int | None:
    """A row or column number, or None when it has more than three significant digits (out of any range)."""
    significant = digits.lstrip("0") or "0"
    return int(significant) if len(significant) <= 3 else None


def strip_groups(text: str) -> str:
    """The text without ``[..]`` groups (hierarchical sub-cells), as the release strips them."""
    parts, start = [], 0
    while True:
        opening = text.find("[", start)
        if opening < 0:
            break
        closing = text.find("]", opening + 1)
        if closing < 0:
            break  # no later group can close either
        parts.append(text[start:opening])
        start = closing + 1
    parts.append(text[start:])
    return "".join(parts)


def read_rows(text: str, n: int, marked: bool) -> set[tuple[int, int, bool]]:
    """The in-range ``(row, column, marked)`` cells of a text; ``marked`` reads ``!`` after a column."""
    cells = set()
    for row_digits, columns in set((_MARKED_ROW if marked else _UNION_ROW).findall(text)):
        row = index_value(row_digits)
        if row is None or not 1 <= row <= n:
            continue
        for column_digits, mark in set(_COLUMN.findall(columns)):
            column = index_value(column_digits)
            if column is not None and 1 <= column <= n:
                cells.add((row, column, mark == "!"))
    return cells


@dataclass
class Section:
    """The cells and coverage marks of one category section."""

    cells: set = field(default_factory=set)
    marks: set = field(default_factory=set)


@dataclass
class Reading:
    """What the tolerant reader found in one text.

    ``cells``: the union grid over the whole text; ``marks``: cells written with ``!`` anywhere;
    ``none_word``: the word ``none`` occurs; ``sections``: the category sections in order of
    their (last) header; ``scores``: the scores read, ``rejected``: labels whose first value
    was outside 0..10.
    """

    cells: set = field(default_factory=set)
    marks: set = field(default_factory=set)
    none_word: bool = False
    sections: dict = field(default_factory=dict)
    scores: dict = field(default_factory=dict)
    rejected: set = field(default_factory=set)

    @property
    def grid_read(self) -> bool:
        """True when a grid was read: some cell, or an explicit ``none``."""
        return bool(self.cells) or self.none_word


def read_scores(text: str) -> tuple[dict, set]:
    """The first value of each score label, within 0..10; the labels whose first value was outside."""
    scores: dict[str, float] = {}
    rejected: set[str] = set()
    for match in _SCORE.finditer(text):
        key = match.group(1).lower()
        if key in scores or key in rejected:
            continue
        value = float(match.group(2))
        if 0.0 <= value <= 10.0:
            scores[key] = value
        else:
            rejected.add(key)
    return scores, rejected


def read_text(text: str, n: int) -> Reading:
    """Scan one judge text (linear time) into a `Reading`."""
    reading = Reading()
    reading.scores, reading.rejected = read_scores(text)
    body = strip_groups(text)
    unmarked = body.replace("!", "")  # the union is read with the marks removed, as in the release
    reading.none_word = _NONE.search(unmarked) is not None
    reading.cells.update((r, c) for r, c, _ in read_rows(unmarked, n, marked=False))
    reading.marks.update((r, c) for r, c, mark in read_rows(body, n, marked=True) if mark)
    reading.marks &= reading.cells
    headers = list(_HEADER.finditer(text))
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        name = header.group(1).lower()
        reading.sections.pop(name, None)  # a repeated header replaces the earlier section
        section = reading.sections[name] = Section()
        for r, c, mark in read_rows(text[header.end():end], n, marked=True):
            section.cells.add((r, c))
            if mark:
                section.marks.add((r, c))
    return reading
