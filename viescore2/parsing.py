"""Reading judge text into scores and grids: `parse_output` and `parse_grid`, over a tolerant scan
(`read_text`) that reads text as the public release (VIEScoreTwo ``run_eval.py``) does, or a strict
reader that raises at the first irregular line.

Reading as the release does keeps parse rates and grid metrics comparable with its numbers;
where the release has a known bug the reader follows the paper. Every pattern matches in time
linear in the text.

docs/methods/viescore2.md, "Reading the judge's answers", lists the rules and the differences from
the release.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from vlmjudge.text import remove_spans

from .grid import CATEGORIES, DEFAULT_N, SCORE_KEYS, CategoryGrids, Grid, GridStatus, Localization, ParsedOutput

__all__ = ["parse_output", "parse_grid", "read_text", "Reading", "Section", "read_rows", "read_scores",
           "strip_groups", "index_value", "SCORE_KEYS"]

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
    """A row or column number, or None when it has more than three significant digits (out of any range).

    Examples:
        >>> index_value("007"), index_value("12345")
        (7, None)
    """
    significant = digits.lstrip("0") or "0"
    return int(significant) if len(significant) <= 3 else None


def strip_groups(text: str) -> str:
    """The text without ``[..]`` groups (hierarchical sub-cells), as the release strips them.

    Examples:
        >>> strip_groups("r1: 2 [3,4] r2: 5")
        'r1: 2  r2: 5'
    """
    return remove_spans(text, "[", "]")


def read_rows(text: str, n: int, marked: bool) -> set[tuple[int, int, bool]]:
    """The in-range ``(row, column, marked)`` cells of a text; ``marked`` reads ``!`` after a column.

    Examples:
        Row 20 is outside a 16 x 16 grid and is left out; `!` marks a high-coverage cell:

        >>> sorted(read_rows("r5: 8,9! r20: 1", 16, marked=True))
        [(5, 8, False), (5, 9, True)]
    """
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
    """The cells and coverage marks of one category section.

    Examples:
        >>> reading = read_text("artifact:\\nr5: 8,9!\\nmisalign:\\nnone", 16)
        >>> reading.sections["artifact"] == Section(cells={(5, 8), (5, 9)}, marks={(5, 9)})
        True
        >>> reading.sections["misalign"]
        Section(cells=set(), marks=set())
    """

    cells: set = field(default_factory=set)
    marks: set = field(default_factory=set)


@dataclass
class Reading:
    """What the tolerant reader found in one text.

    ``cells``: the union grid over the whole text; ``marks``: cells written with ``!`` anywhere;
    ``none_word``: the word ``none`` occurs; ``sections``: the category sections in order of
    their (last) header; ``scores``: the scores read, ``rejected``: labels whose first value
    was outside 0..10.

    Examples:
        >>> reading = read_text("r5: 8,9! and 6: 1 [r7: 2]", 16)
        >>> sorted(reading.cells), sorted(reading.marks), reading.grid_read
        ([(5, 8), (5, 9), (6, 1)], [(5, 9)], True)
        >>> read_text("nothing to see", 16).grid_read
        False
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
    """The first value of each score label, within 0..10; the labels whose first value was outside.

    Examples:
        The first value of each label counts; 12/10 is outside 0..10 and stays unread:

        >>> read_scores("score: 7.5/10 pq: 12/10")
        ({'score': 7.5}, {'pq'})
    """
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
    """Scan one judge text (linear time) into a `Reading`.

    Examples:
        >>> reading = read_text("pq: 8/10\\nsc: 6/10\\nnone", 16)
        >>> reading.scores, reading.none_word, reading.cells
        ({'pq': 8.0, 'sc': 6.0}, True, set())
    """
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


# The strict reader: one line at a time, every irregularity raises (the tolerant one is `read_text` above).
_SCORE_RE = re.compile(r"\b(pq|sc|score)\s*:\s*(-?\d+(?:\.\d+)?)\s*/\s*10(?!\d)", re.IGNORECASE)
_HEADER_RE = re.compile(r"^(artifacts?|misalign(?:ments?|s)?)\s*:\s*(.*)$", re.IGNORECASE)
_ROW_RE = re.compile(r"^(?:row|r)?\s*(\d{1,2})\s*:(.*)$", re.IGNORECASE)
_COL_RE = re.compile(r"(\d+)(!?)")
_NONE_RE = re.compile(r"^none\.?$", re.IGNORECASE)
_STRIP = str.maketrans("", "", "*`")


@dataclass
class _Section:
    """What the strict reader collected for one section (the single grid or a category)."""

    seen: bool = False
    rows: int = 0
    none: bool = False
    cells: set = field(default_factory=set)
    marks: set = field(default_factory=set)


def _row(text: str) -> tuple[int, list[tuple[int | None, bool]]] | None:
    """A strict row ``r<k>: c,c!,...`` (columns of four or more digits read as None), else None."""
    m = _ROW_RE.match(text)
    if not m:
        return None
    items = m.group(2).split(",")
    if items and not items[-1].strip():
        items = items[:-1]  # a trailing comma
    cols = []
    for item in items:
        cm = _COL_RE.fullmatch(item.strip())
        if not cm:
            return None
        cols.append((index_value(cm.group(1)), cm.group(2) == "!"))
    return (int(m.group(1)), cols) if cols else None


def _parse_strict(text: str, n: int) -> ParsedOutput:
    """Read a text in the exact format; raise ValueError at the first irregular line or value."""
    scores: dict[str, float] = {}
    sections = {"grid": _Section(), "artifact": _Section(), "misalign": _Section()}
    current = "grid"
    for raw in text.splitlines():
        line = raw.translate(_STRIP).strip().lstrip("-•>").strip()
        if not line:
            continue
        found = list(_SCORE_RE.finditer(line))
        if found:
            for m in found:
                key, value = m.group(1).lower(), float(m.group(2))
                if not 0.0 <= value <= 10.0:
                    raise ValueError(f"{key} outside 0..10: {raw[:80]!r}")
                if key in scores:
                    raise ValueError(f"{key} given twice: {raw[:80]!r}")
                scores[key] = value
            continue
        header = _HEADER_RE.match(line)
        if header:
            current = "artifact" if header.group(1).lower().startswith("artifact") else "misalign"
            if sections[current].seen:
                raise ValueError(f"header {current!r} repeated: {raw[:80]!r}")
            sections[current].seen = True
            line = header.group(2).strip()
            if not line:
                continue
        if _NONE_RE.match(line):
            sections[current].none = True
            continue
        row = _row(line)
        if row is None:
            raise ValueError(f"unrecognized line: {raw[:80]!r}")
        r, cols = row
        section = sections[current]
        section.rows += 1
        for c, marked in cols:
            if c is None or not (1 <= r <= n and 1 <= c <= n):
                raise ValueError(f"cell outside 1..{n}: {raw[:80]!r}")
            section.cells.add((r, c))
            if marked:
                section.marks.add((r, c))

    def grid_of(sec: _Section) -> Grid | None:
        if sec.rows and sec.none:
            raise ValueError("a grid section has both rows and 'none'")
        if not sec.rows and not sec.none:
            return None
        return Grid(frozenset(sec.cells), frozenset(sec.marks), n)

    if sections["artifact"].seen or sections["misalign"].seen:
        if sections["grid"].rows or sections["grid"].none:
            raise ValueError("grid lines before the first category header")
        grids = {name: grid_of(sections[name]) for name in CATEGORIES}
        if any(g is None for g in grids.values()):
            raise ValueError(f"incomplete category sections: {sorted(k for k, g in grids.items() if g is None)}")
        localization = CategoryGrids(grids["artifact"], grids["misalign"])
        return ParsedOutput(scores, localization, _status_of(localization.union()),
                            {name: _status_of(g) for name, g in localization.items()}, dict(localization.items()))
    grid = grid_of(sections["grid"])
    if grid is None and not scores:
        raise ValueError("no score and no grid found")
    return ParsedOutput(scores, grid, _status_of(grid), {"grid": _status_of(grid)})


def _status_of(grid: Grid | None) -> GridStatus:
    """FAILED for no grid, NONE for an empty one, OK for one with defect cells."""
    return GridStatus.FAILED if grid is None else GridStatus.NONE if grid.is_empty else GridStatus.OK


def _parse_tolerant(text: str, n: int) -> ParsedOutput:
    """Read a text as the release does (`read_text`); never raises."""
    reading = read_text(text, n)
    sections = {name: Grid(frozenset(sec.cells), frozenset(sec.marks), n) for name, sec in reading.sections.items()}
    whole = Grid(frozenset(reading.cells), frozenset(reading.marks), n) if reading.grid_read else None
    status = _status_of(whole)
    localization: Localization | None = whole
    if whole is not None and set(sections) == set(CATEGORIES):
        localization = CategoryGrids(sections["artifact"], sections["misalign"])
    if sections:
        category_status = {name: GridStatus.FAILED if whole is None or name not in sections
                           else _status_of(sections[name]) for name in CATEGORIES}
    else:
        category_status = {"grid": status}
    return ParsedOutput(dict(reading.scores), localization, status, category_status, sections, whole)


def parse_output(text: str, n: int = DEFAULT_N, strict: bool = False) -> ParsedOutput:
    """Read scores and grids from judge text as the release reads it; ``strict=True`` raises on any irregularity.

    Tolerant (the default): never raises for a string; a grid with no in-range cell and no
    ``none`` is a failure (``status`` FAILED, ``localization`` None).

    Examples:
        Scores first, then an artifact section with one marked cell and a clean misalignment
        section:

        >>> out = parse_output("pq: 8/10\\nsc: 6/10\\nartifact:\\nr5: 8,9!\\nmisalign:\\nnone")
        >>> out.scores, out.status.value
        ({'pq': 8.0, 'sc': 6.0}, 'ok')
        >>> {name: status.value for name, status in out.category_status.items()}
        {'artifact': 'ok', 'misalign': 'none'}
        >>> sorted(out.union.cells), sorted(out.union.marks)
        ([(5, 8), (5, 9)], [(5, 9)])
        >>> parse_output("pq: 8/10\\nr5 8", strict=True)
        Traceback (most recent call last):
        ...
        ValueError: unrecognized line: 'r5 8'
    """
    if not isinstance(text, str):
        raise TypeError(f"judge output must be a string, got {type(text).__name__}")
    Grid(n=n)  # validates n
    return _parse_strict(text, n) if strict else _parse_tolerant(text, n)


def parse_grid(text: str, n: int = DEFAULT_N, strict: bool = False) -> tuple[Grid | None, GridStatus]:
    """Parse one grid body (rows or ``none``, no header); returns (union grid or None, status).

    Examples:
        >>> grid, status = parse_grid("r2: 3, 4")
        >>> sorted(grid.cells), status.value
        ([(2, 3), (2, 4)], 'ok')
        >>> parse_grid("none")[1].value, parse_grid("looks fine to me")
        ('none', (None, <GridStatus.FAILED: 'failed'>))
    """
    parsed = parse_output(text, n=n, strict=strict)
    if strict and (parsed.scores or isinstance(parsed.localization, CategoryGrids)):
        raise ValueError("a grid body holds only rows or 'none'")
    if strict and parsed.localization is None:
        raise ValueError(f"no grid in {text[:80]!r}")
    return parsed.union, parsed.status
