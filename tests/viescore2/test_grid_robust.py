"""The grid parser cannot crash (issue 19 item 3): on any string, `parse_output` and `parse_grid` return a
status (tolerant mode) or raise only ValueError (strict mode), and their scans are linear in the text."""
import pytest
from hypothesis import given, settings, strategies as st

from viescore2.grid import CategoryGrids, Grid, GridStatus, ParsedOutput, format_output
from viescore2.parsing import parse_grid, parse_output

N = 16
MB = 1_000_000


def check_tolerant(text: str, n: int = N, grid_too: bool = True) -> ParsedOutput:
    """Tolerant parsing returns a consistent result whose cells lie on the grid."""
    parsed = parse_output(text, n=n)
    assert parsed.status in set(GridStatus)
    assert (parsed.localization is None) == (parsed.status is GridStatus.FAILED) == (parsed.union is None)
    if parsed.union is not None:
        assert all(1 <= r <= n and 1 <= c <= n for r, c in parsed.union.cells)
        assert (parsed.status is GridStatus.NONE) == parsed.union.is_empty
    assert all(0.0 <= v <= 10.0 for v in parsed.scores.values())
    if grid_too:
        grid, status = parse_grid(text, n=n)
        assert status is parsed.status and grid == parsed.union
    return parsed


def check_strict(text: str, n: int = N, grid_too: bool = True) -> None:
    """Strict parsing either reads the text or raises ValueError, nothing else."""
    for parse in (parse_output, parse_grid) if grid_too else (parse_output,):
        try:
            parse(text, n=n, strict=True)
        except ValueError:
            pass


@st.composite
def valid_outputs(draw):
    """A formatted judge output: scores, then one grid or both category sections."""
    cell = st.tuples(st.integers(1, N), st.integers(1, N))

    def grid():
        cells = draw(st.sets(cell, max_size=12))
        marks = draw(st.sets(st.sampled_from(sorted(cells)), max_size=len(cells))) if cells else set()
        return Grid(frozenset(cells), frozenset(marks), N)

    scores = draw(st.dictionaries(st.sampled_from(["score", "pq", "sc"]), st.integers(0, 100).map(lambda v: v / 10)))
    localization = draw(st.sampled_from(["grid", "split", None]))
    loc = grid() if localization == "grid" else CategoryGrids(grid(), grid()) if localization == "split" else None
    return format_output(scores, loc)


NOISE = st.sampled_from(["1" * 4400, "9" * 40, "0", "17", "!", ":", ",", ";", ".", " ", "\t", "\r", "\n", "[", "]",
                         "**", "`", "none", "r", "row ", "artifact:", "misalign:", "score:", "/10", "/100", "-",
                         "٣", "\u2028", "\x00", "\ufffd", "𝟙"])


@st.composite
def mutated(draw):
    """A valid output with insertions, deletions and repeated slices."""
    text = draw(valid_outputs())
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "repeat"]))
        if op == "insert":
            text = text[:at] + draw(NOISE) + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 5)):]
        else:
            text = text[:at] + text[at:at + draw(st.integers(1, 8))] * draw(st.integers(2, 50)) + text[at:]
    return text


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_random_text_never_crashes(text):
    check_tolerant(text)
    check_strict(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(NOISE | st.sampled_from(["5", "8", "16", "2: ", "r5: 8,9", "pq: 7/10"]), max_size=40).map("".join))
def test_near_valid_text_never_crashes(text):
    check_tolerant(text)
    check_strict(text)


@settings(max_examples=200, deadline=None)
@given(mutated())
def test_mutated_outputs_never_crash(text):
    check_tolerant(text)
    check_strict(text)


@settings(max_examples=100, deadline=None)
@given(valid_outputs().filter(bool))
def test_valid_outputs_read_the_same_in_both_modes(text):
    tolerant, strict = parse_output(text), parse_output(text, strict=True)
    assert tolerant.scores == strict.scores and tolerant.status is strict.status
    assert tolerant.union == strict.union


def test_an_overlong_column_is_a_failure_not_an_int_error():
    """Python refuses int() of more than 4300 digits; such a column is simply out of range."""
    text = "r1: " + "1" * 4400
    assert check_tolerant(text).status is GridStatus.FAILED
    with pytest.raises(ValueError, match="outside"):
        parse_output(text, strict=True)
    assert check_tolerant("r" + "1" * 5000 + ": 3").status is GridStatus.FAILED
    assert check_tolerant("score: " + "9" * 5000 + "/10").scores == {}
    assert check_tolerant("r5: 8\n" + "r1: " + "1" * 4400).union == Grid({(5, 8)})


DEGENERATE = {
    "digits": "1" * MB, "spaces": " " * MB, "newlines": "\n" * MB, "colons": "1:" * (MB // 2),
    "open brackets": "[" * MB, "marks": "!" * MB, "long column": "r1: " + "1" * MB,
    "long score": "score: " + "7" * MB + "/10", "score spaces": "score:" + " " * MB,
    "comma run": "r1: " + "," * MB, "repeated column": "r1: " + "1," * (MB // 2),
    "many rows": "r1: 1,2\n" * (MB // 8), "many headers": "artifact:\n" * (MB // 10),
    "crlf rows": "r3: 4\r\n" * (MB // 7), "mixed": "r1: 1 2 3 ; 4 5! 6." * (MB // 20),
    "header spaces": "artifact" + " " * MB, "unicode digits": "r1: " + "٣" * MB,
}


@pytest.mark.parametrize("name", sorted(DEGENERATE))
def test_degenerate_megabyte_inputs_are_read(name):
    text = DEGENERATE[name]
    parsed = check_tolerant(text, grid_too=False)
    check_strict(text, grid_too=False)
    if name in ("many rows", "repeated column"):
        assert parsed.status is GridStatus.OK
    if name in ("digits", "spaces", "newlines", "open brackets", "marks", "long column", "comma run"):
        assert parsed.status is GridStatus.FAILED


def test_non_strings_are_a_type_error():
    with pytest.raises(TypeError):
        parse_output(b"r1: 1")


#: What a server's `\ud800` escape or a damaged replay file can hand a reader: lone surrogates
#: (raw, reversed pairs, and as JSON escapes), noncharacters and NUL.
BAD_UNICODE = (st.sampled_from(["\ud800", "\udfff", "\udc00\ud800", "\ud83d", "\\ud800", "\\udc00", "\ufffe",
                                "\uffff", "\x00", "\ufffd"]) | st.integers(0xD800, 0xDFFF).map(chr))
GRID_PIECES = st.sampled_from(["pq: 8/10", "sc: 6/10", "score: 7/10", "artifact:", "misalign:", "r5: 8,9!", "none",
                               "\n", " ", ",", "!", "[", "]", "r", ":", "1", "12"])


@settings(max_examples=300, deadline=None)
@given(st.lists(BAD_UNICODE | GRID_PIECES | st.text(max_size=6), max_size=60).map("".join))
def test_lone_surrogates_and_invalid_unicode_are_read_or_refused(text):
    check_tolerant(text)
    check_strict(text)


def test_a_lone_surrogate_beside_a_valid_output_leaves_it_read():
    parsed = check_tolerant("pq: 8/10 \ud800\nsc: 6/10\udfff\nr5: 8,9\n")
    assert parsed.scores == {"pq": 8.0, "sc": 6.0} and sorted(parsed.union.cells) == [(5, 8), (5, 9)]
