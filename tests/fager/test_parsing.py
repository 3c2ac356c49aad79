"""Answer parsing: tolerant of format, never of meaning."""
from __future__ import annotations

import pytest

from fager.parsing import AnswerParseError, parse_answer


@pytest.mark.parametrize(("text", "answer", "rationale"), [
    ('{"answer": "yes", "rationale": "A brown bottle is visible."}', "yes", "A brown bottle is visible."),
    ('```json\n{"answer": "NO", "rationale": "No cap."}\n```', "no", "No cap."),
    ('Sure: {"answer": "unknown", "rationale": "Too blurry\tto read."}', "unknown", "Too blurry\tto read."),
    ("Yes. The label reads 260 TABLETS.", "yes", "The label reads 260 TABLETS."),
    ("**No** - the label is blue", "no", "the label is blue"),
    ("Answer: unknown\nRationale: the text is cut off", "unknown", "the text is cut off"),
    ("no", "no", ""),
])
def test_readable_answers(text, answer, rationale):
    parsed = parse_answer(text)
    assert (parsed.answer, parsed.rationale) == (answer, rationale)


@pytest.mark.parametrize("text", [
    None, "", "   ", "Yesterday the bottle was brown.", "Probably yes", "nope",
    '{"rationale": "x"}', '{"answer": "yes", "rationale": 3}',
    '{"answer": "yes", ', "[1, 2]",
])
def test_unreadable_answers_raise(text):
    with pytest.raises(AnswerParseError):
        parse_answer(text)


@pytest.mark.parametrize(("text", "answer"), [
    ('{"answer": "maybe", "rationale": "x"}', "unknown"), ('{"answer": "Yes.", "rationale": "x"}', "unknown"),
    ('{"answer": " YES ", "rationale": "x"}', "yes"), ('{"answer": true}', "unknown"),
    ('{"answer": null, "rationale": null}', "unknown"),
])
def test_json_answer_values_are_normalised_as_the_release_does(text, answer):
    """The release scores an answer field by str(v).strip().lower(), any other word as unknown (0.5)."""
    assert parse_answer(text).answer == answer


def test_long_rationale_is_cut_not_rejected():
    parsed = parse_answer('{"answer": "yes", "rationale": "' + "a" * 2000 + '"}')
    assert parsed.answer == "yes" and len(parsed.rationale) == 600
