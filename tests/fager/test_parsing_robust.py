"""The FAGER readers cannot crash: on any text they return a value or raise their documented error,
in time linear in the text (issue 19, "parsers that cannot crash")."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fager.asking import AgentError, read_output
from fager.parsing import AnswerParseError, load_json, parse_answer, read_answer_list
from fager.schema import ANSWERS, MAX_RATIONALE, QuestionAnswer, Rubric

#: A hang guard, not a speed target: 1 MB through a quadratic reader would take hours.
HANG_GUARD_S = 300

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ANSWER_WORDS = st.sampled_from(["yes", "no", "unknown", "Yes", " NO ", "Yes.", "maybe", "", "true"])


def _reads_or_refuses(text: str) -> None:
    """Every reader on one text: a value or its own error, nothing else."""
    try:
        assert isinstance(parse_answer(text), QuestionAnswer)
    except AnswerParseError:
        pass
    for strip_thinking in (False, True):
        try:
            entries = read_answer_list(text, strip_thinking=strip_thinking)
        except AnswerParseError:
            continue
        assert all(set(e) == {"answer", "rationale"} for e in entries)
    try:
        read_output(text, Rubric)
    except AgentError:
        pass


@st.composite
def near_valid(draw) -> str:
    """A well-formed single or batched reply, fenced or in prose, then cut, spliced or repeated."""
    entries = draw(st.lists(st.fixed_dictionaries(
        {"id": st.one_of(st.integers(-3, 30), st.text("0123456789", max_size=3)), "answer": ANSWER_WORDS,
         "rationale": st.text(max_size=40)}), max_size=6))
    reply = json.dumps(draw(st.sampled_from([{"answers": entries}, entries[0] if entries else {}])))
    reply = draw(st.sampled_from(["{}", "```json\n{}\n```", "Here: {} done", "<think>x</think>{}"])).replace(
        "{}", reply)
    op = draw(st.sampled_from(["keep", "cut", "splice", "repeat", "nest"]))
    at = draw(st.integers(0, len(reply)))
    if op == "cut":
        return reply[:at]
    if op == "splice":
        return reply[:at] + draw(st.text(alphabet='{}[]":,\\9e-* `\n<>', max_size=8)) + reply[at:]
    if op == "repeat":
        return reply[:at] + reply[at:at + 3] * draw(st.integers(1, 300)) + reply[at:]
    if op == "nest":
        depth = draw(st.integers(1, 3000))
        return reply[:at] + "[" * depth + "]" * depth + reply[at:]
    return reply


@SETTINGS
@given(st.text(max_size=400))
def test_random_text_never_crashes(text):
    _reads_or_refuses(text)


@SETTINGS
@given(near_valid())
def test_near_valid_and_mutated_replies_never_crash(text):
    _reads_or_refuses(text)


@SETTINGS
@given(st.sampled_from(ANSWERS), st.text(max_size=800))
def test_a_json_answer_round_trips(answer, rationale):
    """Whatever the rationale holds (braces, quotes, newlines), the JSON answer reads back as written."""
    parsed = parse_answer(json.dumps({"answer": answer, "rationale": rationale}))
    assert (parsed.answer, parsed.rationale) == (answer, rationale.strip()[:MAX_RATIONALE])


@SETTINGS
@given(st.lists(st.tuples(st.integers(-50, 50), ANSWER_WORDS), max_size=12))
def test_batched_answers_come_back_in_id_order(pairs):
    """Entries sorted by int(id), ties in reply order (the release's stable sort)."""
    reply = json.dumps({"answers": [{"id": str(i), "answer": a} for i, a in pairs]})
    expected = [a for _, a in sorted(pairs, key=lambda p: p[0])]
    assert [e["answer"] for e in read_answer_list(reply)] == expected


DEGENERATE = [
    '{"answer":"yes","x":' + "9" * 5000 + "}",           # beyond Python's int digit limit
    '{"answer": "yes", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",  # deeper than the stack
    '{"answers": [{"id": ' + "9" * 5000 + ', "answer": "yes"}]}',
    '{"answers": [{"id": 1e400, "answer": "yes"}]}',      # an infinite id
    '{"answers": [{"id": NaN, "answer": "yes"}]}',
    "\x00\ud800{\"answer\": \"yes\"}",
]


@pytest.mark.parametrize("text", DEGENERATE)
def test_degenerate_replies_are_parse_failures_or_answers(text):
    _reads_or_refuses(text)
    with pytest.raises(AnswerParseError):
        load_json('{"x": ' + "[" * 100_000 + "}")


@pytest.mark.timeout(HANG_GUARD_S)
def test_the_issue_examples():
    """Issue 19: the oversized integer is a parse failure, not a ValueError; the starred text (15 s
    with the old quadratic regex) is a parse failure too, and `python -m bench.parsers` times it."""
    with pytest.raises(AnswerParseError):
        parse_answer('{"answer":"yes","x":' + "9" * 5000 + "}")
    with pytest.raises(AnswerParseError):
        parse_answer("*" * 32000 + "x")


MEGABYTE = 1_000_000
PATTERNS = ["*", " ", "`", "{", "}", "[", "\"", "answer:", "yes", "```", "<think>", "{\"answers\": [", "\n", "**yes"]


@pytest.mark.timeout(HANG_GUARD_S)
@pytest.mark.parametrize("unit", PATTERNS)
def test_one_megabyte_is_read_or_refused(unit):
    """1 MB of a repeated fragment (the shapes that make backtracking regexes quadratic) is read or
    refused with the documented error. Linear time is measured in `python -m bench.parsers`; the
    timeout only guards against a reader that would take hours here."""
    text = unit * (MEGABYTE // len(unit)) + "x"
    _reads_or_refuses(text)
    _reads_or_refuses("```" + text + "```")


QA_HEADER = "index,prompt,level,category,importance,question,gold_answer,answer_space,source_fact\n"


@SETTINGS
@given(st.text(max_size=300), st.booleans())
def test_qa_csv_text_is_read_or_refused_with_qa_format_error(text, with_header):
    from fager.qa_store import QAFormatError, parse_qa_csv
    try:
        parse_qa_csv(QA_HEADER + text if with_header else text)
    except QAFormatError:
        pass


@pytest.mark.parametrize("body", ['1,"' + "a" * 200_000 + '",level_1\n', "1," + "b" * 200_000 + "\n", '"\n' * 5])
def test_oversized_or_broken_qa_csv_fields_are_qa_format_errors(body):
    """csv's own field-size limit (128 KiB) and stray quotes surface as QAFormatError, not csv.Error."""
    from fager.qa_store import QAFormatError, parse_qa_csv
    with pytest.raises(QAFormatError):
        parse_qa_csv(QA_HEADER + body)


#: What a server's `\ud800` escape or a damaged replay file can hand a reader: lone surrogates
#: (raw, reversed pairs, and as JSON escapes), noncharacters and NUL.
BAD_UNICODE = (st.sampled_from(["\ud800", "\udfff", "\udc00\ud800", "\ud83d", "\\ud800", "\\udc00", "\ufffe",
                                "\uffff", "\x00", "\ufffd"]) | st.integers(0xD800, 0xDFFF).map(chr))
GARBAGE = st.lists(BAD_UNICODE | st.text(max_size=6) | st.sampled_from(['{"answer": "yes", "rationale": "', '"}',
                                                                        "Answer: yes - ", '{"answers": [', "]}"]),
                   max_size=40).map("".join)


@SETTINGS
@given(GARBAGE)
def test_lone_surrogates_and_invalid_unicode_are_read_or_refused(text):
    _reads_or_refuses(text)


@SETTINGS
@given(ANSWER_WORDS, st.lists(BAD_UNICODE | st.text(max_size=4), min_size=1, max_size=8).map("".join),
       st.booleans())
def test_a_json_answer_with_a_bad_rationale_is_read_or_refused(answer, rationale, escaped):
    """Escaped (`\\ud800` in ASCII JSON) or raw, a lone surrogate never escapes as a pydantic error."""
    _reads_or_refuses(json.dumps({"answer": answer, "rationale": rationale}, ensure_ascii=escaped))


@pytest.mark.parametrize("reply", ['{"answer": "yes", "rationale": "\ud800"}',
                                   '{"answer": "yes", "rationale": "\\ud800"}', "yes - \udfff"])
def test_a_lone_surrogate_is_an_answer_parse_error(reply):
    with pytest.raises(AnswerParseError, match="unreadable answer"):
        parse_answer(reply)


@pytest.mark.parametrize("reply", ['{"answer": "yes", "rationale": "\ud800"}',
                                   '{"answer": "no", "rationale": "\\udc00 escaped"}'])
def test_fager_score_counts_a_surrogate_answer_as_a_parse_failure(reply):
    """Through the whole pipeline: the one unreadable answer is a counted failure, left out of the
    means; the call does not abort and every other question keeps its recorded answer."""
    from pathlib import Path

    from fagent_helpers import keyed_replay, noise, released, released_answers
    from fager import read_qa_csv
    from fager.core import Fager

    abo = Path(__file__).resolve().parents[1] / "data" / "fager" / "ABO"
    record = released(abo, "real")[0]
    item, qa_sets = str(record["index"]), read_qa_csv(abo / "QA.csv")

    def score(answers):
        return Fager(keyed_replay(answers)).score([noise(0)], [record["original_prompt"]], qa_sets=qa_sets,
                                                  ids=[item])[0]

    clean = score(released_answers([record]))
    broken = score({**released_answers([record]), (item, 1): reply})
    assert clean.counts.failed == 0 and broken.counts.failed == 1
    assert [f.position for f in broken.parse_failures] == [1]
    assert "unreadable answer" in broken.parse_failures[0].reason
    kept = [(q.position, q.answer) for q in broken.questions if q.position != 1]
    assert kept == [(q.position, q.answer) for q in clean.questions if q.position != 1]
