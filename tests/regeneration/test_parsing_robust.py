"""regeneration's answer readers cannot crash (issue 19 item 3): on any text up to 1 MB they return a
value or raise JSONReadError (parse_answer: a ParseFailure); `python -m bench.parsers` measures that
they run in linear time.

Property tests on random, near-valid and mutated text, then the degenerate answers of the issue."""
from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regeneration.parsing import READINGS, JSONReadError, ParseFailure, extract_json, parse_answer, prompt_variants
from regeneration.saved_runs import RunFolder
from regeneration.schema import Feedback, PromptList, Rating
from vlmjudge.requests import Answer

MB = 1_000_000
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)
#: Characters that matter to a JSON reader, so random text often looks almost like JSON.
JSONISH = st.sampled_from(list('{}[]":,\\ \n\t0123456789.eE+-truefalsnu') + ["```", "```json", "\x00", "\ud800"])


def _reads_or_refuses(text: str) -> None:
    """Every reader either gives a value or its documented failure, nothing else."""
    for reading in READINGS:
        for read in (extract_json, prompt_variants):
            try:
                read(text, reading=reading)
            except JSONReadError:
                pass  # the documented failure: nothing to check beyond its type
        for model in (Rating, PromptList, Feedback):
            got = parse_answer(Answer(text), model, "stage", reading=reading)
            assert isinstance(got, (model, ParseFailure))
            if isinstance(got, ParseFailure):
                assert got.stage == "stage" and len(got.to_json()["text"]) <= 500


@PROPERTY
@given(st.text(max_size=300))
def test_random_text(text):
    _reads_or_refuses(text)


@PROPERTY
@given(st.lists(JSONISH, max_size=120).map("".join))
def test_jsonish_text(text):
    _reads_or_refuses(text)


@PROPERTY
@given(json_objects, st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=30),
       st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=30))
def test_valid_objects_in_prose_are_read_back(value, before, after):
    """A JSON object with brace-free prose around it is read back exactly, in both readings."""
    text = before + json.dumps(value) + after
    assert extract_json(text) == value
    assert extract_json("```json\n" + json.dumps(value) + "\n```", reading="tolerant") == value


@PROPERTY
@given(json_objects, st.data())
def test_mutated_objects(value, data):
    """Truncated, spliced and character-edited JSON: a value or the documented error, never a crash."""
    text = json.dumps(value, ensure_ascii=data.draw(st.booleans()))
    cut = data.draw(st.integers(0, len(text)))
    where = data.draw(st.integers(0, len(text)))
    insert = data.draw(st.lists(JSONISH, max_size=6).map("".join))
    for mutated in (text[:cut], text[:where] + insert + text[where:], text[:where] + text[where + 1:],
                    text[:cut] + text[:cut], "[" * cut + text + "]" * where):
        _reads_or_refuses(mutated)


def _degenerate() -> dict[str, str]:
    """The issue's degenerate answers, and their like, each up to 1 MB."""
    return {
        "open brackets": '{"aspect": ' + "[" * 1000,
        "open brackets, 1 MB": '{"aspect": ' + "[" * MB,
        "deep closed lists": '{"a": ' + "[" * (MB // 2 - 8) + "]" * (MB // 2 - 8) + "}",
        "deep objects": '{"a":' * (MB // 6) + "1" + "}" * (MB // 6),
        "int over the digit limit": '{"answer": "yes", "x": ' + "9" * 5000 + "}",
        "int of 1 MB": '{"x": ' + "9" * MB + "}",
        "stars": "*" * 32000 + "x",
        "stars, 1 MB": "*" * MB + "x",
        "open braces": "{" * MB,
        "close braces": "}" * MB,
        "quotes": '"' * MB,
        "backslashes": "\\" * MB,
        "unclosed string": '{"a": "' + "x" * MB,
        "whitespace run": "a" + " " * MB + "b",
        "fence then whitespace": "```" + " " * MB + "x",
        "whitespace then fence": "x" + " " * MB + "```",
        "long prompt": '{"prompts": ["' + "a" * MB + '"]}',
        "many keys": "{" + ",".join(f'"k{i}": 1' for i in range(MB // 12)) + "}",
        "non-finite": '{"reason": NaN, "score": Infinity}',
        "lone surrogates": '{"reason": "' + "\\ud800" * 1000 + '", "score": 3}',
    }


#: Degenerate answers no reading can take (the rest are valid JSON objects or hold one).
REFUSED = {"open brackets", "open brackets, 1 MB", "deep closed lists", "deep objects", "int over the digit limit",
           "int of 1 MB", "stars", "stars, 1 MB", "open braces", "close braces", "quotes", "backslashes",
           "unclosed string", "whitespace run", "fence then whitespace", "whitespace then fence"}


#: A hang guard, not a speed target: 1 MB through a quadratic reader would take hours.
HANG_GUARD_S = 300


@contextlib.contextmanager
def _no_error():
    yield


@pytest.mark.timeout(HANG_GUARD_S)
@pytest.mark.parametrize("name", list(_degenerate()))
def test_degenerate_answers_fail_cleanly(name):
    """Each degenerate answer is read or refused with the documented error, and is a parse failure,
    never an exception, in parse_answer. Linear time is measured in `python -m bench.parsers`; the
    timeout here only guards against a reader that would take hours on 1 MB (quadratic)."""
    text = _degenerate()[name]
    assert len(text) <= MB + 64
    for reading in READINGS:
        for read in (extract_json, prompt_variants):
            with pytest.raises(JSONReadError) if name in REFUSED else _no_error():
                read(text, reading=reading)
        for model in (Rating, PromptList):
            got = parse_answer(Answer(text), model, "stage", reading=reading)
            assert isinstance(got, (model, ParseFailure))


def test_degenerate_answers_by_hand():
    """What the issue names: nesting and huge numbers are the documented failure, and a bare answer
    without an object is one too; a parsed lone surrogate survives the run folder's JSON files."""
    for text in ('{"aspect": ' + "[" * 1000, '{"answer":"yes","x":' + "9" * 5000 + "}", "*" * 32000 + "x", ""):
        for reading in READINGS:
            with pytest.raises(JSONReadError):
                extract_json(text, reading=reading)
    assert isinstance(parse_answer(Answer('{"reason": ' + "[" * 1000), Rating, "content"), ParseFailure)
    surrogate = '{"reason": "odd \\ud800 text", "score": 3}'
    assert extract_json(surrogate) == {"reason": "odd \ud800 text", "score": 3}
    refused = parse_answer(Answer(surrogate), Rating, "content")  # pydantic takes no lone surrogate
    assert isinstance(refused, ParseFailure) and "reason" in refused.reason


def test_run_folder_keeps_a_lone_surrogate(tmp_path):
    data = {"reason": "odd \ud800 text", "prompts": ["\udfff", "été"]}
    RunFolder.write_json(tmp_path / "x.json", data)
    assert RunFolder.read_json(tmp_path / "x.json") == data
    folder = RunFolder(str(tmp_path / "run"))
    folder.log("prompts", item="a", prompts=data["prompts"])
    assert folder.events("prompts")[0]["prompts"] == data["prompts"]


def test_reading_is_checked():
    with pytest.raises(ValueError, match="reading must be one of"):
        extract_json("{}", reading="lenient")


def test_a_degenerate_answer_is_a_counted_failure_on_every_rerun(tmp_path, scorer):
    """A degenerate IUT answer leaves its reference unscored with a counted parse failure; rerunning
    the same folder (the answers replayed again, as from a response cache) neither crashes nor scores
    it, while the other reference is regenerated both times."""
    from regen_helpers import ToyGenerator, loop_answers, reference_images, replay

    from regeneration.config import LoopConfig
    from regeneration.core import RegenerationLoop

    refs = reference_images(2)
    answers = loop_answers(refs, 1, 2, exact_at=lambda item, t: 0)
    answers[("iut_caption", "ref1", 0, 0)] = '{"aspect": ' + "[" * 1000 + '{"a":' + "9" * 5000
    for _ in range(2):
        loop = RegenerationLoop(replay(answers), ToyGenerator(refs), scorer, str(tmp_path / "run"),
                                config=LoopConfig(rounds=1, variants=2))
        ok, failed = loop.run(refs)
        assert ok.status == "scored" and ok.clip == pytest.approx(100.0, abs=1e-6)
        assert failed.status == "failed" and failed.clip is None and failed.parse_failures == 1


#: What a server's `\ud800` escape or a damaged replay file can hand a reader: lone surrogates
#: (raw, reversed pairs, and as JSON escapes), noncharacters and NUL.
BAD_UNICODE = (st.sampled_from(["\ud800", "\udfff", "\udc00\ud800", "\ud83d", "\\ud800", "\\udc00", "\ufffe",
                                "\uffff", "\x00", "\ufffd"]) | st.integers(0xD800, 0xDFFF).map(chr))


@PROPERTY
@given(st.lists(BAD_UNICODE | JSONISH | st.text(max_size=6), max_size=80).map("".join))
def test_lone_surrogates_and_invalid_unicode_are_read_or_refused(text):
    _reads_or_refuses(text)


@PROPERTY
@given(st.lists(BAD_UNICODE | st.text(max_size=4), min_size=1, max_size=8).map("".join), st.booleans())
def test_answers_with_bad_unicode_inside_their_strings_are_read_or_refused(text, escaped):
    """Raw or escaped in ASCII JSON: a value, a JSONReadError or a ParseFailure, never a crash."""
    for value in ({"score": 3, "reason": text}, {"prompts": [text, "a red cup"]}, {text: text}):
        _reads_or_refuses(json.dumps(value, ensure_ascii=escaped))
