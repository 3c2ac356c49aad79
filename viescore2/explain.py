"""Parameter-free explanation of a judge output: fixed rules and templates over the parsed prediction.

Defect cells are grouped into 4-connected regions per category, largest first; up to three
are described by a coarse location (the 3 x 3 region holding the region's centre) and their
row/column bounds, the rest are counted. Scores below 5 read as low, 5 to below 8 as
moderate, 8 and above as high. Artifacts are tied to perceptual quality, misalignments to
semantic consistency. The text restates the prediction; it does not make it correct.
"""
from __future__ import annotations

from dataclasses import dataclass

from .grid import DEFAULT_N, CategoryGrids, Cell, Grid, ParsedOutput, format_number
from .parsing import parse_output

MAX_DESCRIBED = 3
_VERTICAL = ("top", "middle", "bottom")
_HORIZONTAL = ("left", "center", "right")


@dataclass(frozen=True)
class Region:
    """One 4-connected group of defect cells on an n x n grid.

    Examples:
        >>> from viescore2.grid import Grid
        >>> [top, corner] = regions(Grid({(1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (15, 15), (15, 16)},
        ...                              marks={(1, 1)}, n=16))
        >>> top.size, top.rows, top.cols, top.location, top.marked
        (5, (1, 2), (1, 3), 'top left', 1)
        >>> corner.location
        'bottom right'
    """

    cells: frozenset[Cell]
    marked: int
    n: int

    @property
    def size(self) -> int:
        """Number of cells."""
        return len(self.cells)

    @property
    def rows(self) -> tuple[int, int]:
        """(first, last) row, 1-based."""
        rs = [r for r, _ in self.cells]
        return min(rs), max(rs)

    @property
    def cols(self) -> tuple[int, int]:
        """(first, last) column, 1-based."""
        cs = [c for _, c in self.cells]
        return min(cs), max(cs)

    @property
    def location(self) -> str:
        """Coarse location: the third of the grid, vertically and horizontally, holding the centre."""
        def third(values: list[int]) -> int:
            centre = sum(v - 0.5 for v in values) / len(values)  # cell centres in [0, n]
            return min(2, int(centre * 3 / self.n))

        v = third([r for r, _ in self.cells])
        h = third([c for _, c in self.cells])
        if v == 1 and h == 1:
            return "center"
        if v == 1:
            return _HORIZONTAL[h]
        if h == 1:
            return _VERTICAL[v]
        return f"{_VERTICAL[v]} {_HORIZONTAL[h]}"


def regions(grid: Grid) -> list[Region]:
    """4-connected regions, largest first (ties: the one starting higher, then further left).

    Examples:
        4-connected only: diagonal neighbours are separate regions, the largest first:

        >>> from viescore2.grid import Grid
        >>> [region.size for region in regions(Grid({(1, 1), (2, 2), (3, 2), (3, 3)}, n=4))]
        [3, 1]
    """
    left = set(grid.cells)
    found = []
    for start in sorted(grid.cells):
        if start not in left:
            continue
        left.discard(start)
        stack, group = [start], {start}
        while stack:
            r, c = stack.pop()
            for nb in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if nb in left:
                    left.discard(nb)
                    group.add(nb)
                    stack.append(nb)
        found.append(Region(frozenset(group), len(group & grid.marks), grid.n))
    return sorted(found, key=lambda reg: (-reg.size, min(reg.cells)))


def score_level(score: float) -> str:
    """'low' below 5, 'moderate' from 5 to below 8, 'high' from 8.

    Examples:
        >>> score_level(4.9), score_level(5), score_level(8)
        ('low', 'moderate', 'high')
    """
    return "low" if score < 5 else "moderate" if score < 8 else "high"


def _span(word: str, bounds: tuple[int, int]) -> str:
    lo, hi = bounds
    return f"{word} {lo}" if lo == hi else f"{word}s {lo}-{hi}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def describe_region(region: Region) -> str:
    """'top left (rows 2-4, columns 1-3, 5 cells)'.

    Examples:
        >>> from viescore2.grid import Grid
        >>> describe_region(regions(Grid({(1, 1), (1, 2), (2, 1)}, n=16))[0])
        'top left (rows 1-2, columns 1-2, 3 cells)'
    """
    return f"{region.location} ({_span('row', region.rows)}, {_span('column', region.cols)}, " \
           f"{_plural(region.size, 'cell')})"


def coverage_sentence(grid: Grid) -> str | None:
    """Wording for the share of marked (high-coverage) cells; None when no cell is marked.

    Examples:
        >>> from viescore2.grid import Grid
        >>> coverage_sentence(Grid({(1, 1), (1, 2)}, marks={(1, 1)}, n=4))
        'Most of these cells are marked as high-coverage.'
        >>> coverage_sentence(Grid({(1, 1)}, n=4)) is None
        True
    """
    if grid.is_empty or not grid.marks:
        return None
    share = len(grid.marks) / len(grid.cells)
    amount = "All" if share == 1 else "Most" if share >= 0.5 else "Some"
    return f"{amount} of these cells are marked as high-coverage."


def describe_grid(grid: Grid, noun: str) -> str:
    """One category's cells: regions by size, up to three described, the rest counted.

    Examples:
        >>> from viescore2.grid import Grid
        >>> grid = Grid({(8, 8), (8, 9), (1, 16)}, n=16)
        >>> print(describe_grid(grid, "visual artifact"))  # doctest: +NORMALIZE_WHITESPACE
        Visual artifacts in 3 cells, 2 regions: center (row 8, columns 8-9, 2 cells);
        top right (row 1, column 16, 1 cell).
        >>> describe_grid(Grid(n=16), "visual artifact")
        'No visual artifact is marked.'
    """
    if grid.is_empty:
        return f"No {noun} is marked."
    found = regions(grid)
    parts = [describe_region(reg) for reg in found[:MAX_DESCRIBED]]
    extra = len(found) - MAX_DESCRIBED
    if extra > 0:
        parts.append(f"and {_plural(extra, 'smaller region')}")
    text = f"{noun[0].upper()}{noun[1:]}s in {_plural(len(grid), 'cell')}, " \
           f"{_plural(len(found), 'region')}: " + "; ".join(parts) + "."
    coverage = coverage_sentence(grid)
    return f"{text} {coverage}" if coverage else text


def _score_sentence(name: str, value: float) -> str:
    return f"{name} is {score_level(value)} ({format_number(round(value, 2))}/10)."


def explain(output: str | ParsedOutput, n: int = DEFAULT_N) -> str:
    """A readable explanation built only from the predicted scores, categories and cell locations.

    Examples:
        Artifacts tie to perceptual quality, misalignments to semantic consistency; the overall
        score is their geometric mean, sqrt(8 x 4):

        >>> text = "pq: 8/10\\nsc: 4/10\\nartifact:\\nr1: 1,2\\nmisalign:\\nnone"
        >>> print(explain(text))  # doctest: +NORMALIZE_WHITESPACE
        Perceptual quality is high (8/10). Visual artifacts in 2 cells, 1 region: top left
        (row 1, columns 1-2, 2 cells).
        Semantic consistency is low (4/10). No semantic misalignment is marked.
        The overall score (geometric mean of PQ and SC) is moderate (5.66/10).
    """
    parsed = parse_output(output, n=n) if isinstance(output, str) else output
    scores, loc = parsed.scores, parsed.localization
    lines = []
    if scores.get("score") is not None:
        lines.append(_score_sentence("The overall score", scores["score"]))
    if isinstance(loc, CategoryGrids):
        for key, name, grid, noun in (("pq", "Perceptual quality", loc.artifact, "visual artifact"),
                                      ("sc", "Semantic consistency", loc.misalign, "semantic misalignment")):
            head = _score_sentence(name, scores[key]) + " " if scores.get(key) is not None else ""
            lines.append(head + describe_grid(grid, noun))
    else:
        for key, name in (("pq", "Perceptual quality"), ("sc", "Semantic consistency")):
            if scores.get(key) is not None:
                lines.append(_score_sentence(name, scores[key]))
        if isinstance(loc, Grid):
            lines.append(describe_grid(loc, "defect"))
    if scores.get("score") is None and parsed.overall is not None:
        lines.append(_score_sentence("The overall score (geometric mean of PQ and SC)", parsed.overall))
    if loc is None and len(parsed.category_status) == 2:
        lines.append("The artifact and misalignment grids could not be parsed.")
    elif loc is None and not scores:
        lines.append("The output could not be parsed: no score and no defect grid.")
    return "\n".join(lines)
