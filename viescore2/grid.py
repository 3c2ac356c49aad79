"""Defect grids: N x N cells with coverage marks, their text format, and what parsing judge text returns.

VIEScore2 localizes defects as cells of a grid the judge writes as text (score lines, then one
line per row with defects, ``none`` for a clean grid). This module holds the grid types, writes
that text, and defines `ParsedOutput` and `GridStatus`, which let a caller tell a clean grid
from a parse failure; `viescore2.parsing` reads the text.

docs/methods/viescore2.md, "The grid text format", describes the format.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Union

import numpy as np

from .scoring import overall_score

#: Cells per side of the defect grid (16 x 16), as the paper and the release use.
DEFAULT_N = 16
CATEGORIES = ("artifact", "misalign")
SCORE_KEYS = ("score", "pq", "sc")
MAX_N = 99  # the text format writes rows with one or two digits

Cell = tuple[int, int]


def _cellset(cells: Iterable) -> frozenset[Cell]:
    return frozenset((int(r), int(c)) for r, c in cells)


@dataclass(frozen=True)
class Grid:
    """Defect cells as 1-based (row, column) pairs on an n x n grid; marks are high-coverage cells.

    Examples:
        Cells are 1-based (row, column); a mark (`!`) is a high-coverage cell:

        >>> grid = Grid({(5, 8), (5, 9), (2, 3)}, marks={(5, 9)}, n=16)
        >>> grid.lines(), len(grid), grid.is_empty
        (['r2: 3', 'r5: 8,9!'], 3, False)
        >>> cells = grid.to_array()
        >>> cells.shape, int(cells.sum()), bool(cells[4, 8])
        ((16, 16), 3, True)
        >>> Grid.from_array(cells) == grid.without_marks()
        True
        >>> Grid(n=16).to_text()
        'none'
        >>> Grid({(17, 1)}, n=16)
        Traceback (most recent call last):
        ...
        ValueError: cells outside 1..16: [(17, 1)]
    """

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
    """Separate artifact and misalignment grids; their union is the aggregate defect grid.

    Examples:
        >>> both = CategoryGrids(artifact=Grid({(1, 1)}, n=4), misalign=Grid({(1, 1), (2, 2)}, marks={(2, 2)}, n=4))
        >>> sorted(both.union().cells), sorted(both.union().marks), both.n
        ([(1, 1), (2, 2)], [(2, 2)], 4)
    """

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
    """The aggregate grid of one grid or of two categories.

    Examples:
        >>> both = CategoryGrids(Grid({(1, 1)}, n=4), Grid({(3, 3)}, n=4))
        >>> sorted(union_of(both).cells), union_of(Grid({(2, 2)}, n=4)).lines()
        ([(1, 1), (3, 3)], ['r2: 2'])
    """
    return localization.union() if isinstance(localization, CategoryGrids) else localization


def format_number(x: float) -> str:
    """A score as short text: up to 4 decimals, no trailing zeros.

    Examples:
        >>> format_number(7.0), format_number(6.25), format_number(1 / 3)
        ('7', '6.25', '0.3333')
    """
    text = f"{float(x) + 0.0:.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def format_scores(scores: Mapping[str, float]) -> list[str]:
    """Score lines in output order (score, pq, sc).

    Examples:
        >>> format_scores({"sc": 6.5, "pq": 8})
        ['pq: 8/10', 'sc: 6.5/10']
    """
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
    """The full judge text: score lines, then one grid or both category sections.

    Examples:
        Scores first, then one grid, or both category sections with their headers:

        >>> print(format_output({"score": 7}, CategoryGrids(Grid({(1, 1)}, n=4), Grid(n=4))))
        score: 7/10
        artifact:
        r1: 1
        misalign:
        none
    """
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
    """Outcome of parsing a grid: defects found, a successful empty grid, or a parse failure.

    Examples:
        >>> GridStatus("none") is GridStatus.NONE, GridStatus.FAILED.value
        (True, 'failed')
    """

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

    Examples:
        >>> out = ParsedOutput(scores={"pq": 9.0, "sc": 4.0}, localization=Grid({(2, 2)}, n=4), status=GridStatus.OK)
        >>> out.overall, out.grid_parsed, out.union.lines()
        (6.0, True, ['r2: 2'])
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
