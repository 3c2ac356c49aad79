"""The output grammar accepts exactly the parseable format of each configuration, within its bounds."""
import random

import pytest

xgrammar = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402

from viescore2.grid import CategoryGrids, Grid, format_output  # noqa: E402
from viescore2.parsing import parse_output
from viescore2.pack import Fields, all_fields  # noqa: E402
from viescore2.schema import (longest_output, max_output_chars, output_constraint,  # noqa: E402
                                      output_grammar, token_budget)

_compiled = {}


def accepts(fields, n, text, **bounds):
    key = (Fields.parse(fields).key, n, tuple(sorted(bounds.items())))
    if key not in _compiled:
        _compiled[key] = xgrammar.Grammar.from_ebnf(output_grammar(fields, n, **bounds))
    return _is_grammar_accept_string(_compiled[key], text)


def random_grid(rng, n, marks, max_rows=None, max_cols=None):
    rows = rng.sample(range(1, n + 1), rng.randint(0, min(n, max_rows or n)))
    cells = {(r, c) for r in rows for c in rng.sample(range(1, n + 1), rng.randint(1, min(n, max_cols or n)))}
    marked = {c for c in cells if marks and rng.random() < 0.3}
    return Grid(frozenset(cells), frozenset(marked), n)


def random_output(rng, fields, n, **bounds):
    scores = {k: rng.choice([0, 3, 7.5, 9.25, 10]) for k in fields.score_keys}
    loc = None
    if fields.grid == "single":
        loc = random_grid(rng, n, fields.marks, **bounds)
    elif fields.grid == "split":
        loc = CategoryGrids(random_grid(rng, n, fields.marks, **bounds), random_grid(rng, n, fields.marks, **bounds))
    return format_output(scores, loc, marks=fields.marks)


@pytest.mark.parametrize("n", [4, 8, 16])
@pytest.mark.parametrize("fields", all_fields(), ids=lambda f: f.key)
def test_accepts_every_canonical_output(fields, n):
    rng = random.Random(n)
    for _ in range(12):
        text = random_output(rng, fields, n)
        assert accepts(fields, n, text), text
        parse_output(text, n, strict=True)  # and each one is regular
    assert accepts(fields, n, longest_output(fields, n))


def test_rejects_what_is_out_of_order_out_of_range_or_unrequested():
    f = "pq_sc+split+marks"
    good = "pq: 7/10\nsc: 4.5/10\nartifact:\nr3: 5,6!\nr4: 6\nmisalign:\nnone"
    assert accepts(f, 16, good)
    bad = [
        good.replace("r3: 5,6!\nr4: 6", "r4: 6\nr3: 5,6!"),  # rows decreasing
        good.replace("r4: 6", "r3: 7"),                      # a row repeated
        good.replace("5,6!", "6!,5"),                        # columns decreasing
        good.replace("5,6!", "5,5"),                         # a column repeated
        good.replace("5,6!", "5,17"),                        # a column outside 1..16
        good.replace("r4: 6", "r17: 6"),                     # a row outside 1..16
        good.replace("misalign:\nnone", "misalign:"),        # an empty section
        good.replace("\nmisalign:\nnone", ""),               # a missing section
        good.replace("sc: 4.5/10\n", ""),                    # a missing score
        good.replace("7/10", "11/10"),                       # a score above 10
        good.replace("7/10", "7.125/10"),                    # three decimals
        good + "\n",                                         # trailing text
        "sc: 4/10\npq: 7/10\nartifact:\nnone\nmisalign:\nnone",  # scores out of order
    ]
    for text in bad:
        assert not accepts(f, 16, text), text
    assert not accepts("pq_sc+split", 16, good)              # marks not requested
    assert not accepts("overall+grid", 16, "score: 5/10\nr1: 1\nnone")
    assert accepts("overall+grid", 16, "score: 10/10\nnone") and accepts("grid", 8, "r8: 8")


def test_bounds_on_rows_and_columns():
    assert accepts("grid", 8, "r1: 1,2\nr5: 3,8", max_rows=2, max_cols=2)
    assert not accepts("grid", 8, "r1: 1\nr2: 1\nr5: 1", max_rows=2, max_cols=2)
    assert not accepts("grid", 8, "r1: 1,2,3", max_rows=2, max_cols=2)
    rng = random.Random(0)
    for fields in ("grid+marks", "pq_sc+split"):
        f = Fields.parse(fields)
        for _ in range(10):
            text = random_output(rng, f, 16, max_rows=3, max_cols=2)
            assert accepts(f, 16, text, max_rows=3, max_cols=2), text
        assert accepts(f, 16, longest_output(f, 16, 3, 2), max_rows=3, max_cols=2)


def test_longest_output_and_token_budget_by_hand():
    # pq/sc lines 11 chars each, two headers of 9, 2 x 4 rows "r1: 1!,2!,3!,4!" of 15, 11 newlines
    assert longest_output("pq_sc+split+marks", 4).splitlines()[3] == "r1: 1!,2!,3!,4!"
    assert max_output_chars("pq_sc+split+marks", 4) == 11 + 11 + 9 + 9 + 8 * 15 + 11 == 171
    assert token_budget("pq_sc+split+marks", 4) == 172
    # N = 16 single grid, rows 15-16, columns 15-16, no marks: "r15: 15,16" twice, one newline
    assert max_output_chars("grid", 16, max_rows=2, max_cols=2) == 10 + 1 + 10
    assert max_output_chars("overall", 16) == len("score: 9.99/10")


def test_one_rule_per_index_without_bounds():
    rules = [line.split(" ::= ")[0] for line in output_grammar("grid", 16).splitlines()]
    assert sum(r.startswith("vs_rows_") for r in rules) == 16
    assert sum(r.startswith("vs_cols_") for r in rules) == 16
    bounded = [line.split(" ::= ")[0] for line in output_grammar("grid", 16, max_rows=2).splitlines()]
    assert sum(r.startswith("vs_rows_") for r in bounded) == 15 + 15  # (k, at most 2) k=1..15; (k, at most 1) k=2..16
    constraint = output_constraint("overall+grid", 8)
    assert constraint.kind == "ebnf" and constraint.spec == output_grammar("overall+grid", 8)
