"""Grid type, text format and the tolerant parser."""
import pytest
from hypothesis import given, settings, strategies as st

from viescore2.grid import CategoryGrids, Grid, GridStatus, format_output
from viescore2.scoring import overall_score
from viescore2.parsing import parse_grid, parse_output


@st.composite
def grids(draw, n=None):
    n = n or draw(st.integers(1, 20))
    cells = draw(st.sets(st.tuples(st.integers(1, n), st.integers(1, n)), max_size=40))
    marks = draw(st.sets(st.sampled_from(sorted(cells)), max_size=len(cells))) if cells else set()
    return Grid(frozenset(cells), frozenset(marks), n)


scores_st = st.dictionaries(st.sampled_from(["score", "pq", "sc"]),
                            st.integers(0, 100).map(lambda v: v / 10), max_size=3)


@settings(max_examples=100, deadline=None)
@given(grids(), scores_st)
def test_round_trip_single_grid(grid, scores):
    parsed = parse_output(format_output(scores, grid), n=grid.n)
    assert parsed.localization == grid
    assert parsed.scores == scores
    assert parsed.status is (GridStatus.NONE if grid.is_empty else GridStatus.OK)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 20).flatmap(lambda n: st.tuples(grids(n), grids(n))), scores_st)
def test_round_trip_two_categories(pair, scores):
    loc = CategoryGrids(*pair)
    parsed = parse_output(format_output(scores, loc), n=loc.n)
    assert parsed.localization == loc
    assert parsed.scores == scores
    assert parsed.union == pair[0].union(pair[1])
    # the strict parser accepts every formatted output too
    assert parse_output(format_output(scores, loc), n=loc.n, strict=True).localization == loc


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parser_never_raises_on_text(text):
    parsed = parse_output(text)
    assert parsed.status in set(GridStatus)
    assert (parsed.localization is None) == (parsed.status is GridStatus.FAILED)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["r", "row ", "5", "17", ":", ",", "!", "8", " ", "\n", "none", "artifact:",
                                 "misalign:", "score", "pq", "/10", "-", "x", "99", "0", "."]), max_size=30))
def test_parser_never_raises_on_near_miss_text(tokens):
    """Near-miss grids and scores: a status always, cells only inside the 16 x 16 grid, scores in
    0..10, and whatever the tolerant parser reads, written back out, reads the same strictly."""
    parsed = parse_output("".join(tokens))
    assert isinstance(parsed.status, GridStatus)
    assert (parsed.localization is None) == (parsed.status is GridStatus.FAILED)
    assert all(0 <= v <= 10 for v in parsed.scores.values())
    if parsed.localization is None:
        return
    union = parsed.union
    assert all(1 <= r <= 16 and 1 <= c <= 16 for r, c in union.cells)
    assert union.marks <= union.cells
    assert (parsed.status is GridStatus.NONE) == union.is_empty
    again = parse_output(format_output(parsed.scores, parsed.localization), n=parsed.localization.n, strict=True)
    assert again.localization == parsed.localization and again.scores == parsed.scores


def test_paper_example_row():
    grid, status = parse_grid("r5: 8,9!")
    assert status is GridStatus.OK
    assert grid.cells == {(5, 8), (5, 9)}
    assert grid.marks == {(5, 9)}


def test_none_is_a_successful_empty_grid_and_garbage_is_a_failure():
    ok = parse_output("score: 9/10\nnone")
    assert ok.status is GridStatus.NONE and ok.grid_parsed and ok.localization == Grid()
    bad = parse_output("score: 9/10\nthe image looks fine")
    assert bad.status is GridStatus.FAILED and not bad.grid_parsed and bad.localization is None
    assert bad.scores == {"score": 9.0}


def test_tolerant_parsing_rules():
    text = ("```\nPQ: 6.5 / 10\nsc:11/10\n**Artifacts:**\n- Row 2: 3, 4 ,\nR17: 1\nr3: 0,16!,20\nblah\n"
            "Misalignment: none\n```")
    parsed = parse_output(text)
    assert parsed.scores == {"pq": 6.5}  # sc outside 0..10 is not accepted
    # only a line holding exactly 'artifact:' or 'misalign:' opens a section (as in the release)
    assert parsed.sections == {} and parsed.localization == Grid({(2, 3), (2, 4), (3, 16)}, {(3, 16)})
    assert parsed.status is GridStatus.OK and parsed.category_status == {"grid": GridStatus.OK}


@pytest.mark.parametrize("text, cells", [
    ("row 5: 8 9", {(5, 8), (5, 9)}),            # space-separated columns
    ("r5: 8,9.", {(5, 8), (5, 9)}),              # a trailing period
    ("r5: 8; r6: 9", {(5, 8), (6, 9)}),          # ';' separators
    ("5: 8,9", {(5, 8), (5, 9)}),                # a bare row number
    ("The defects: r5: 8,9", {(5, 8), (5, 9)}),  # a row inside prose
    ("r5: 8,9\nr17: 1\nr6: 2", {(5, 8), (5, 9), (6, 2)}),  # an out-of-range row among good ones
    ("r5: 123", set()),                          # a 3-digit column is one number, out of range
    ("r5: 8,9\n6: 3", {(5, 8), (5, 9), (6, 3)}),  # a row never continues on the next line
])
def test_tolerant_reading_as_the_release_reads_grids(text, cells):
    parsed = parse_output(text)
    assert parsed.union.cells == cells if cells else parsed.status is GridStatus.FAILED


def test_none_found_is_a_clean_grid_and_markdown_rows_fail():
    assert parse_grid("none found") == (Grid(), GridStatus.NONE)
    assert parse_grid("No defects: **none**") == (Grid(), GridStatus.NONE)
    assert parse_grid("**r7**: 15") == (None, GridStatus.FAILED)  # the colon must follow the row number


def test_a_single_category_section_is_read():
    parsed = parse_output("artifact:\nr1: 1!")
    assert parsed.status is GridStatus.OK and parsed.union == Grid({(1, 1)}, {(1, 1)})
    assert parsed.sections == {"artifact": Grid({(1, 1)}, {(1, 1)})}
    assert parsed.category_status == {"artifact": GridStatus.OK, "misalign": GridStatus.FAILED}
    assert not isinstance(parsed.localization, CategoryGrids)  # categories are known only with both sections
    assert parse_output("artifact:\nr1: 1\nmisalign:").localization == CategoryGrids(Grid({(1, 1)}), Grid())
    assert parse_output("artifact:\nmisalign:").status is GridStatus.FAILED  # no cell and no 'none'


def test_a_malformed_row_in_a_longer_grid_is_skipped_as_the_release_does():
    # the release reads the good rows and reports the grid as read; the bad one contributes nothing
    parsed = parse_output("r2: 3\nr4: five\nr6: 7")
    assert parsed.status is GridStatus.OK and parsed.union.cells == {(2, 3), (6, 7)}


@pytest.mark.parametrize("text", ["r17: 1", "r0: 1", "r5: 0", "r20: 1,2", "r5: 17, 99"])
def test_rows_whose_cells_all_fall_outside_are_a_parse_failure(text):
    assert parse_grid(text, n=16) == (None, GridStatus.FAILED)
    assert not parse_output(text).grid_parsed
    with pytest.raises(ValueError):
        parse_grid(text, n=16, strict=True)


def test_strict_mode_rejects_irregular_targets():
    for text in ("r5: 8\nhello", "r17: 1", "artifact:\nr1: 1", "r1: 1\nnone", "pq: 12/10"):
        with pytest.raises(ValueError):
            parse_output(text, strict=True)


def test_grid_validation_and_lines():
    with pytest.raises(ValueError):
        Grid({(0, 1)})
    with pytest.raises(ValueError):
        Grid({(1, 1)}, {(2, 2)})
    g = Grid({(2, 5), (2, 1), (1, 3)}, {(2, 5)}, 8)
    assert g.lines() == ["r1: 3", "r2: 1,5!"]
    assert g.lines(marks=False) == ["r1: 3", "r2: 1,5"]
    assert Grid.from_array(g.to_array(), g.marks_array()) == g


def test_overall_is_the_geometric_mean_of_pq_and_sc():
    assert overall_score({"pq": 4, "sc": 9}) == pytest.approx(6.0)
    assert overall_score({"score": 3, "pq": 4, "sc": 9}) == 3.0
    assert overall_score({"pq": 4}) is None
    assert parse_output("pq: 4/10\nsc: 9/10").overall == pytest.approx(6.0)


def test_format_rejects_out_of_range_scores():
    with pytest.raises(ValueError):
        format_output({"score": 10.5})
    assert format_output({"score": 7.25}, Grid()) == "score: 7.25/10\nnone"
