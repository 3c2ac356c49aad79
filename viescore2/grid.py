"""Defect grids: N x N cells with coverage marks, their text format, and the parser of judge text.

The judge writes score lines first, then grid lines, one per row with defects::

    pq: 7/10
    sc: 4/10
    artifact:
    r5: 8,9!
    misalign:
    none

Rows and columns are 1-based; ``!`` after a column marks a high-coverage cell; ``none``
is an empty grid. With one grid the header lines are left out. By default the parser reads
text as the public release reads it (`viescore2.grid_reader`): tolerant of prose, spacing and
separators, and it reports a status that tells a successful empty grid (``none``) from a parse
failure (no in-range cell and no ``none``). ``strict=True`` instead turns every irregularity
into a ``ValueError``, for users who want to validate hand-written targets.
"""
from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Union

import numpy as np

from .grid_reader import index_value, read_text

DEFAULT_N = 16
CATEGORIES = ("artifact", "misalign")
SCORE_KEYS = ("score", "pq", "sc")
MAX_N = 99  # the text format writes rows with one or two digits

Cell = tuple[int, int]


def _cellset(cells: Iterable) -> frozenset[Cell]:
    return frozenset((int(r), int(c)) for r, c in cells)


@dataclass(frozen=True)
class Grid:
    """Defect cells as 1-based (row, column) pairs on an n x n grid; marks are high-coverage cells."""

    cells: frozenset[Cell] = frozenset()
    marks: frozenset[Cell] = frozenset()
    n: int = DEFAULT_N

    def __post_init__(self) -> None:
        if not isinstance(self.n, (int, np.integer)) or not 1 <= self.n <= MAX_N:
            raise ValueError(f"grid size n must be an integer in 1..{MAX_N}, got {self.n!r}")
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "cells", _cellset(self.cells))
        object.__setattr__(self, "marks", _cellset(self.marks))
        bad = [rc for rc in self.cells if not (1 <= rc[0] <= self.n and 1 <= rc[1] <= self.n)]
        if bad:
            raise ValueError(f"cells outside 1..{self.n}: {sorted(bad)[:5]}")
        if not self.marks <= self.cells:
            raise ValueError(f"marks must be defect cells; unmarked-cell marks: {sorted(self.marks - self.cells)[:5]}")

    @property
    def is_empty(self) -> bool:
        """True for a clean image (no defect cell)."""
        return not self.cells

    def __len__(self) -> int:
        return len(self.cells)

    def union(self, other: "Grid") -> "Grid":
        """Set union of cells and of marks, for combining defect categories."""
        if other.n != self.n:
            raise ValueError(f"cannot combine grids of size {self.n} and {other.n}")
        return Grid(self.cells | other.cells, self.marks | other.marks, self.n)

    def without_marks(self) -> "Grid":
        """The same cells with no coverage marks (for instructions that do not ask for marks)."""
        return Grid(self.cells, frozenset(), self.n)

    def to_array(self) -> np.ndarray:
        """Boolean (n, n) array of defect cells, row-major, 0-based."""
        out = np.zeros((self.n, self.n), dtype=bool)
        for r, c in self.cells:
            out[r - 1, c - 1] = True
        return out

    def marks_array(self) -> np.ndarray:
        """Boolean (n, n) array of marked cells."""
        out = np.zeros((self.n, self.n), dtype=bool)
        for r, c in self.marks:
            out[r - 1, c - 1] = True
        return out

    @classmethod
    def from_array(cls, cells: np.ndarray, marks: np.ndarray | None = None) -> "Grid":
        """Grid from a square boolean array (and an optional array of marks)."""
        cells = np.asarray(cells, dtype=bool)
        if cells.ndim != 2 or cells.shape[0] != cells.shape[1]:
            raise ValueError(f"expected a square 2-D array, got shape {cells.shape}")
        idx = {(int(r) + 1, int(c) + 1) for r, c in zip(*np.nonzero(cells))}
        midx: set[Cell] = set()
        if marks is not None:
            marks = np.asarray(marks, dtype=bool)
            if marks.shape != cells.shape:
                raise ValueError(f"marks shape {marks.shape} differs from cells shape {cells.shape}")
            midx = {(int(r) + 1, int(c) + 1) for r, c in zip(*np.nonzero(marks))}
        return cls(frozenset(idx), frozenset(midx), cells.shape[0])

    def lines(self, marks: bool = True) -> list[str]:
        """Grid lines of the text format: ``r<row>: <col>,<col>!`` in increasing order, or ``none``."""
        if self.is_empty:
            return ["none"]
        rows: dict[int, list[int]] = {}
        for r, c in sorted(self.cells):
            rows.setdefault(r, []).append(c)
        return [f"r{r}: " + ",".join(f"{c}!" if marks and (r, c) in self.marks else str(c) for c in cols)
                for r, cols in rows.items()]

    def to_text(self, marks: bool = True) -> str:
        """The grid body as text (no header)."""
        return "\n".join(self.lines(marks))


@dataclass(frozen=True)
class CategoryGrids:
    """Separate artifact and misalignment grids; their union is the aggregate defect grid."""

    artifact: Grid
    misalign: Grid

    def __post_init__(self) -> None:
        if self.artifact.n != self.misalign.n:
            raise ValueError(f"artifact grid is {self.artifact.n}x{self.artifact.n}, "
                             f"misalign grid is {self.misalign.n}x{self.misalign.n}")

    @property
    def n(self) -> int:
        """Grid size shared by both categories."""
        return self.artifact.n

    def union(self) -> Grid:
        """G = G_art ∪ G_mis with the union of marks."""
        return self.artifact.union(self.misalign)

    def items(self) -> list[tuple[str, Grid]]:
        """(category name, grid) pairs in output order."""
        return [("artifact", self.artifact), ("misalign", self.misalign)]


Localization = Union[Grid, CategoryGrids]


def union_of(localization: Localization) -> Grid:
    """The aggregate grid of one grid or of two categories."""
    return localization.union() if isinstance(localization, CategoryGrids) else localization


def format_number(x: float) -> str:
    """A score as short text: up to 4 decimals, no trailing zeros."""
    text = f"{float(x) + 0.0:.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def format_scores(scores: Mapping[str, float]) -> list[str]:
    """Score lines in output order (score, pq, sc)."""
    unknown = set(scores) - set(SCORE_KEYS)
    if unknown:
        raise ValueError(f"unknown score keys {sorted(unknown)}; expected a subset of {SCORE_KEYS}")
    lines = []
    for key in SCORE_KEYS:
        if key in scores and scores[key] is not None:
            value = float(scores[key])
            if not 0.0 <= value <= 10.0:
                raise ValueError(f"{key} must be within 0..10, got {value}")
            lines.append(f"{key}: {format_number(value)}/10")
    return lines


def format_output(scores: Mapping[str, float] | None = None, localization: Localization | None = None,
                  marks: bool = True) -> str:
    """The full judge text: score lines, then one grid or both category sections."""
    lines = format_scores(scores or {})
    if isinstance(localization, CategoryGrids):
        for name, grid in localization.items():
            lines.append(f"{name}:")
            lines.extend(grid.lines(marks))
    elif isinstance(localization, Grid):
        lines.extend(localization.lines(marks))
    elif localization is not None:
        raise TypeError(f"localization must be a Grid or CategoryGrids, got {type(localization).__name__}")
    return "\n".join(lines)


class GridStatus(str, enum.Enum):
    """Outcome of parsing a grid: defects found, a successful empty grid, or a parse failure."""

    OK = "ok"
    NONE = "none"
    FAILED = "failed"


@dataclass(frozen=True)
class ParsedOutput:
    """Scores and grids read from one judge text, with the grid parse status.

    ``localization`` is `CategoryGrids` when both category sections were found, else one grid
    (the union of everything read); ``sections`` holds the category sections that were found,
    even a lone one; ``whole`` is the union grid as read over the whole text (rows outside the
    sections included), which ``union`` returns when it is set.
    """

    scores: Mapping[str, float]
    localization: Localization | None
    status: GridStatus
    category_status: Mapping[str, GridStatus] = field(default_factory=dict)
    sections: Mapping[str, Grid] = field(default_factory=dict)
    whole: Grid | None = None

    @property
    def grid_parsed(self) -> bool:
        """True when the grid parsed (with defects or as a clean ``none``)."""
        return self.status is not GridStatus.FAILED

    @property
    def union(self) -> Grid | None:
        """The aggregate predicted grid, or None when the grid failed to parse."""
        if self.whole is not None:
            return self.whole
        return None if self.localization is None else union_of(self.localization)

    @property
    def overall(self) -> float | None:
        """The native overall score, else the geometric mean sqrt(PQ * SC), else None."""
        return overall_score(self.scores)


def overall_score(scores: Mapping[str, float | None]) -> float | None:
    """Overall score: ``score`` when given, else sqrt(pq * sc) when both are given."""
    if scores.get("score") is not None:
        return float(scores["score"])
    if scores.get("pq") is not None and scores.get("sc") is not None:
        return math.sqrt(float(scores["pq"]) * float(scores["sc"]))
    return None


# The strict reader: one line at a time, every irregularity raises (the tolerant one is grid_reader).
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
    """Read a text as the release does (`viescore2.grid_reader`); never raises."""
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
    """
    if not isinstance(text, str):
        raise TypeError(f"judge output must be a string, got {type(text).__name__}")
    Grid(n=n)  # validates n
    return _parse_strict(text, n) if strict else _parse_tolerant(text, n)


def parse_grid(text: str, n: int = DEFAULT_N, strict: bool = False) -> tuple[Grid | None, GridStatus]:
    """Parse one grid body (rows or ``none``, no header); returns (union grid or None, status)."""
    parsed = parse_output(text, n=n, strict=strict)
    if strict and (parsed.scores or isinstance(parsed.localization, CategoryGrids)):
        raise ValueError("a grid body holds only rows or 'none'")
    if strict and parsed.localization is None:
        raise ValueError(f"no grid in {text[:80]!r}")
    return parsed.union, parsed.status
