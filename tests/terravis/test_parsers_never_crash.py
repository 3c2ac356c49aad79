"""Issue 19 item 3: every TerraVis reader of model text takes any string (up to 1 MB) and
raises nothing; what it cannot read comes back as None / "" (the documented parse failure).

Property tests over random, near-valid (JSON and labelled answers) and mutated text, plus the
degenerate answers that used to crash (deep nesting, huge integers, repeated labels and braces)."""
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from terravis import answers
from terravis.parsing import first_json_object, leading_option, parse_evidence, parse_reason
from terravis.schema import Evidence, Reason
from terravis.asking import labelled_option, read_option

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PIECES = ['{', '}', '[', ']', '"', ':', ',', '\\', ' ', '\n', '\t', '\r', 'Answer', 'Severity', 'Reason', 'Evidence',
          'Affected aspect', '：', '**', '>', '`', '-', 'yes', 'No', 'Major', 'minor', ' or ', ' and ', 'N/A',
          'eligible', 'aspect', 'evidence', 'reason', '1', '0.5e3', '-', 'true', 'null', 'NaN', '\\u00e9', '\\ud800',
          '\x00', 'é', '影']
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)
ANSWER = st.builds(lambda label, sep, value, tail: f"{label}{sep}{value}{tail}",
                   st.sampled_from(["Answer", "**Answer**", "> Severity", "Reason", "Evidence", "answer", "`Answer`"]),
                   st.sampled_from([": ", ":", " : ", "：", ":\n", ":\n\n"]),
                   st.sampled_from(["Yes", "No", "Major", "Minor", "Yes or No", "N/A", "Eligible", "none", "", "[No]"]),
                   st.sampled_from(["", "\nAffected aspect: hand\nEvidence: six fingers.", ".", "\nReason: x",
                                    ' {"aspect": "hand", "evidence": "x"}']))


@st.composite
def mutated(draw, base):
    """A text from `base`, then cut, with pieces inserted and characters deleted."""
    text = draw(base)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "cut"]))
        if op == "insert":
            text = text[:at] + draw(st.sampled_from(PIECES)) + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + 1:]
        else:
            text = text[:at]
    return text


TEXTS = st.one_of(st.text(max_size=200), st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
                  mutated(JSON.map(json.dumps)), mutated(st.lists(ANSWER, min_size=1, max_size=4).map("\n".join)),
                  mutated(st.builds(lambda a, e: json.dumps({"aspect": a, "evidence": e}), st.text(max_size=20),
                                    st.text(max_size=20))))


def json_reference(text):
    """The first JSON object as `json` reads it from each '{' in turn (its recursion errors as failures)."""
    decoder = json.JSONDecoder(strict=False)
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def read_everything(text):
    """Every TerraVis reader of model text on one string, checking the types of what comes back."""
    obj = first_json_object(text)
    assert obj is None or isinstance(obj, dict)
    assert parse_evidence(text) is None or isinstance(parse_evidence(text), Evidence)
    assert parse_reason(text) is None or isinstance(parse_reason(text), Reason)
    assert leading_option(text, ("Yes", "No")) in (None, "Yes", "No")
    for label in ("Answer", "Severity", "Reason", "Evidence", "Affected aspect"):
        assert isinstance(answers.read_field(text, label), str)
    assert answers.read_detection(text) in (None, True, False)
    assert answers.read_eligibility(text) in (None, True, False)
    assert answers.read_severity(text) in (None, "major", "minor")
    decisions = (("eligibility", ("Yes", "No")), ("detection", ("Yes", "No")), ("severity", ("Major", "Minor")))
    for stage, options in decisions:
        assert read_option(text, options, "Answer:\n", stage).outcome in ("ok", "unparseable", "failed")
        assert labelled_option(text, options, stage) in (None, *options)
    assert read_option(text, ("1", "2", "3", "4", "5", "N"), "Answer:\n", "holistic").outcome in (
        "ok", "unparseable", "failed")
    return obj


@SETTINGS
@given(TEXTS)
def test_no_reader_raises_and_json_objects_are_read_as_json_reads_them(text):
    assert repr(read_everything(text)) == repr(json_reference(text))  # repr: NaN equals NaN


@SETTINGS
@given(st.lists(st.sampled_from(PIECES) | st.characters(), max_size=80).map("".join))
def test_piece_soup_never_raises(text):
    read_everything(text)


def test_deep_nesting_is_a_parse_failure_not_a_recursion_error():
    assert parse_evidence('{"aspect": ' + "[" * 1000) is None
    deep = '{"aspect": "hand", "evidence": "x", "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert parse_evidence(deep) == Evidence(aspect="hand", evidence="x")  # deeper than json's recursion limit
    nested = '{"a": ' * 50_000 + "1" + "}" * 50_000
    value = first_json_object(nested)
    for _ in range(50_000 - 1):
        value = value["a"]
    assert value == {"a": 1}


def test_huge_integers_and_bad_escapes_are_parse_failures():
    assert first_json_object('{"aspect": 1' + "1" * 5000 + "}") is None  # past Python's int digit limit
    assert first_json_object('{"a": 1' + "1" * 5000 + '} {"b": 2}') == {"b": 2}
    assert first_json_object('{"a": "\\x"} {"b": "\\u00e9"}') == {"b": "é"}
    assert parse_reason('{"reason": "' + "\\" * 999 + '"}') is None


MB = 1_000_000
DEGENERATE = ['{' * MB, '[' * MB, '{"aspect": ' + '[' * MB, '{"a":' * (MB // 5), '{"a":[' * (MB // 6), '{"' * (MB // 2),
              '{"a":"' * (MB // 6), '"' * MB, '\\' * MB, '\n' * MB, ' ' * MB, 'Answer' * (MB // 6),
              'Answer:\n' * (MB // 8), 'Answer: Yes or ' * (MB // 15), '**' * (MB // 2), '>' * MB + 'Answer: Yes',
              '{"aspect": "' + 'x' * MB, 'Severity\n' * (MB // 9), 'Yes ' * (MB // 4), '\n' * MB + 'Answer:']


@pytest.mark.timeout(300)  # a hang guard, not a speed target: quadratic work on 1 MB would take hours
@pytest.mark.parametrize("text", DEGENERATE, ids=[f"{t[:12]!r}x{len(t)}" for t in DEGENERATE])
def test_one_megabyte_of_degenerate_text_is_read_or_refused(text):
    """Each kind of reader once on 1 MB; `python -m bench.parsers` measures that the time is linear."""
    assert first_json_object(text) is None or text.startswith('{"a":{')
    assert parse_evidence(text) is None
    assert leading_option(text, ("Yes", "No")) in (None, "Yes")
    assert isinstance(answers.read_field(text, "Answer"), str)
    assert read_option(text, ("Yes", "No"), "Answer:\n", "detection").outcome in ("ok", "unparseable")


#: What a server's `\ud800` escape or a damaged replay file can hand a reader: lone surrogates
#: (raw, reversed pairs, and as JSON escapes), noncharacters and NUL.
BAD_UNICODE = (st.sampled_from(["\ud800", "\udfff", "\udc00\ud800", "\ud83d", "\\ud800", "\\udc00", "\ufffe",
                                "\uffff", "\x00", "\ufffd"]) | st.integers(0xD800, 0xDFFF).map(chr))


@SETTINGS
@given(st.lists(BAD_UNICODE | st.sampled_from(PIECES) | st.text(max_size=6), max_size=60).map("".join))
def test_lone_surrogates_and_invalid_unicode_are_read_or_refused(text):
    assert repr(read_everything(text)) == repr(json_reference(text))


@SETTINGS
@given(st.lists(BAD_UNICODE | st.text(max_size=4), min_size=1, max_size=8).map("".join), st.booleans())
def test_an_evidence_object_with_bad_unicode_is_read_or_refused(text, escaped):
    """Raw or escaped in ASCII JSON, a lone surrogate in a field is an unreadable evidence (None)."""
    answer = json.dumps({"aspect": text, "evidence": text}, ensure_ascii=escaped)
    read_everything(answer)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in json.loads(answer)["aspect"]):  # an escaped pair decodes whole
        assert parse_evidence(answer) is None
