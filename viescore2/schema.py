"""EBNF grammars (xgrammar's dialect) that accept exactly the parseable VIEScore2 output of one configuration.

The grammar writes the requested score lines, then one grid or the ``artifact:`` and
``misalign:`` sections, each either ``none`` or rows ``r<k>: <c>,<c>,...``. Strict increase
is spelled out by rule indices: ``rows_k`` is "row k, then rows after k" or "rows after k"
(one rule per row index), and the same for columns, so every accepted grid is already in
canonical order and has no repeated cell. Optional bounds on rows and columns per row add a
count to the index (``rows_k_m``: at most m rows from k on; counts that cannot bind are
folded away, so without bounds N=16 is 16 row rules and 16 column rules).

Every accepted text is ASCII and at most `max_output_chars` long, and every token decodes to
at least one character, so ``max_output_chars + 1`` new tokens (the +1 for end-of-sequence)
always let constrained decoding finish with reason ``stop``.
"""
from __future__ import annotations

from dataclasses import dataclass

from vlmjudge.requests import Constraint

from .grid import DEFAULT_N, MAX_N
from .pack import Fields, FieldsLike

#: 0-10 with at most two decimals; the tolerant parser reads the same numbers.
NUMBER_RULE = 'vs_num ::= "10" | [0-9] ("." [0-9] [0-9]?)?'
LONGEST_NUMBER = "9.99"


@dataclass(frozen=True)
class GridBounds:
    """At most ``max_rows`` rows per grid and ``max_cols`` columns per row (None: N, no extra bound).

    Examples:
        >>> bounds = GridBounds(4, max_rows=2)
        >>> bounds.rows, bounds.cols
        (2, 4)
        >>> GridBounds(4, max_rows=0)
        Traceback (most recent call last):
        ...
        ValueError: max_rows must be a positive integer or None, got 0
    """

    n: int = DEFAULT_N
    max_rows: int | None = None
    max_cols: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.n, int) or not 1 <= self.n <= MAX_N:
            raise ValueError(f"grid size n must be an integer in 1..{MAX_N}, got {self.n!r}")
        for name in ("max_rows", "max_cols"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or not 1 <= value):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")

    @property
    def rows(self) -> int:
        """Effective row bound (never above n)."""
        return min(self.max_rows or self.n, self.n)

    @property
    def cols(self) -> int:
        """Effective column bound (never above n)."""
        return min(self.max_cols or self.n, self.n)


def _index_rules(kind: str, n: int, bound: int, item: callable, sep: str) -> tuple[str, list[str]]:
    """Rules for a strictly increasing list of 1..n with at most `bound` items; returns (start, rules)."""
    def name(i: int, m: int) -> tuple[str, tuple[int, int]]:
        m = min(m, n - i + 1)  # a count that cannot bind is dropped, so states merge
        return f"vs_{kind}_{i}_{m}", (i, m)

    start, first = name(1, bound)
    rules, todo, seen = [], [first], {first}
    while todo:
        i, m = todo.pop()
        alternative = item(i)
        follow = []
        if i < n and m > 1:
            nxt, state = name(i + 1, m - 1)
            alternative += f' ("{sep}" {nxt})?'
            follow.append(state)
        alts = [alternative]
        if i < n:
            skip, state = name(i + 1, m)
            alts.append(skip)
            follow.append(state)
        rules.append(f"{name(i, m)[0]} ::= " + " | ".join(alts))
        for state in follow:
            if state not in seen:
                seen.add(state)
                todo.append(state)
    return start, sorted(rules, key=_natural)


def _natural(rule: str) -> tuple:
    head = rule.split(" ::= ")[0].split("_")
    return (head[1], int(head[2]), int(head[3]))


def grid_rules(bounds: GridBounds, marks: bool) -> tuple[str, list[str]]:
    """The ``vs_grid`` rule (``none`` or ordered rows) and every rule it uses.

    Examples:
        >>> start, rules = grid_rules(GridBounds(2), marks=False)
        >>> start, rules[0]
        ('vs_grid', 'vs_grid ::= "none" | vs_rows_1_2')
    """
    n = bounds.n
    mark = ' "!"?' if marks else ""
    cols_start, col_rules = _index_rules("cols", n, bounds.cols, lambda c: f'"{c}"{mark}', ",")
    rows_start, row_rules = _index_rules("rows", n, bounds.rows, lambda r: f'"r{r}: " {cols_start}', r"\n")
    return "vs_grid", [f'vs_grid ::= "none" | {rows_start}', *row_rules, *col_rules]


def output_grammar(fields: FieldsLike, n: int = DEFAULT_N, max_rows: int | None = None,
                   max_cols: int | None = None) -> str:
    """The EBNF grammar (root rule ``root``) of one configuration's output.

    Examples:
        >>> output_grammar("overall").splitlines()[0]
        'root ::= "score: " vs_num "/10"'
    """
    fields = Fields.parse(fields)
    bounds = GridBounds(n, max_rows, max_cols)
    parts = [f'"{key}: " vs_num "/10"' for key in fields.score_keys]
    rules = [NUMBER_RULE] if parts else []
    if fields.grid != "none":
        grid, grid_defs = grid_rules(bounds, fields.marks)
        if fields.grid == "single":
            parts.append(grid)
        else:
            parts += [f'"artifact:\\n" {grid}', f'"misalign:\\n" {grid}']
        rules += grid_defs
    root = ' "\\n" '.join(parts)
    return "\n".join([f"root ::= {root}", *rules]) + "\n"


def longest_output(fields: FieldsLike, n: int = DEFAULT_N, max_rows: int | None = None,
                   max_cols: int | None = None) -> str:
    """The longest text the grammar accepts: every score 9.99, every grid the last rows x last columns, marked.

    Examples:
        Every score 9.99, every grid the last rows by the last columns, marked when marks are asked:

        >>> print(longest_output("pq_sc+split+marks", n=2, max_rows=1, max_cols=1))
        pq: 9.99/10
        sc: 9.99/10
        artifact:
        r2: 2!
        misalign:
        r2: 2!
    """
    fields = Fields.parse(fields)
    bounds = GridBounds(n, max_rows, max_cols)
    lines = [f"{key}: {LONGEST_NUMBER}/10" for key in fields.score_keys]
    mark = "!" if fields.marks else ""
    cols = ",".join(f"{c}{mark}" for c in range(n - bounds.cols + 1, n + 1))
    body = [f"r{r}: {cols}" for r in range(n - bounds.rows + 1, n + 1)]
    if fields.grid == "single":
        lines += body
    elif fields.grid == "split":
        lines += ["artifact:", *body, "misalign:", *body]
    return "\n".join(lines)


def max_output_chars(fields: FieldsLike, n: int = DEFAULT_N, max_rows: int | None = None,
                     max_cols: int | None = None) -> int:
    """Characters in the longest accepted output.

    Examples:
        >>> max_output_chars("overall"), len("score: 9.99/10")
        (14, 14)
    """
    return len(longest_output(fields, n, max_rows, max_cols))


def token_budget(fields: FieldsLike, n: int = DEFAULT_N, max_rows: int | None = None,
                 max_cols: int | None = None) -> int:
    """New tokens that always suffice under the grammar: one per character, plus end-of-sequence.

    Examples:
        One token per character, plus the end of the sequence:

        >>> token_budget("overall"), token_budget("pq_sc+split", n=16) > token_budget("pq_sc+split", n=16, max_rows=4)
        (15, True)
    """
    return max_output_chars(fields, n, max_rows, max_cols) + 1


def output_constraint(fields: FieldsLike, n: int = DEFAULT_N, max_rows: int | None = None,
                      max_cols: int | None = None) -> Constraint:
    """The grammar as a request constraint for backends that enforce EBNF.

    Examples:
        >>> constraint = output_constraint("overall+grid", n=4)
        >>> constraint.kind, constraint.spec == output_grammar("overall+grid", n=4)
        ('ebnf', True)
    """
    return Constraint.ebnf(output_grammar(fields, n, max_rows, max_cols))
