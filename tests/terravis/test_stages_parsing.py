"""Answer formats (whole-answer grammars) and the tolerant readers of what a judge wrote."""
import pytest

from terravis import load_pack
from terravis.parsing import first_json_object, leading_option, parse_evidence, parse_reason
from terravis.asking import labelled_option, read_option
from terravis.schema import answer_grammar, options_grammar

xgrammar = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402


def accepts(ebnf, text):
    return _is_grammar_accept_string(xgrammar.Grammar.from_ebnf(ebnf), text)


def test_detection_answer_is_yes_with_evidence_or_a_bare_no():
    pack = load_pack({"limits": {"reason": 10, "aspect": 6, "evidence": 12}})
    g = answer_grammar(pack, "detection", ("Yes", "No"), ["Yes"])
    assert accepts(g, 'Yes{"aspect": "hand", "evidence": "six fingers"}')
    assert accepts(g, "No")
    assert not accepts(g, "Yes")
    assert not accepts(g, 'No{"aspect": "a", "evidence": "b"}')
    assert not accepts(g, 'Yes{"aspect": "hand", "evidence": "six fingers on it"}')  # over 12 characters
    assert not accepts(g, 'Yes{"aspect": "", "evidence": "x"}')


def test_eligibility_and_severity_formats_follow_the_reason_policy():
    pack = load_pack()
    na_only = answer_grammar(pack, "eligibility", ("Yes", "No"), ["No"])
    assert accepts(na_only, "Yes") and accepts(na_only, 'No{"reason": "A company logo."}')
    assert not accepts(na_only, "No")
    both = answer_grammar(pack, "severity", ("Major", "Minor"), ["Major", "Minor"])
    assert accepts(both, 'Minor{"reason": "Background."}') and not accepts(both, "Major")
    assert answer_grammar(pack, "severity", ("Major", "Minor"), []) == options_grammar(("Major", "Minor"))
    with pytest.raises(ValueError, match="not among"):
        answer_grammar(pack, "severity", ("Major", "Minor"), ["Huge"])


def test_rating_grammar():
    g = options_grammar(("1", "2", "3", "4", "5", "N"))
    assert accepts(g, "4") and accepts(g, "N") and not accepts(g, "6") and not accepts(g, "45")


@pytest.mark.parametrize("text, expected", [
    ("Yes", "Yes"), (" yes.", "Yes"), ('"No"', "No"), ("**No**, because", "No"), ("Yesterday", None),
    ("Nope", None), ("", None), ("\n- Yes", "Yes")])
def test_leading_option(text, expected):
    assert leading_option(text, ("Yes", "No")) == expected


def test_rating_options_read_na_and_digits():
    options = ("1", "2", "3", "4", "5", "N")
    assert leading_option("N/A", options) == "N"
    assert leading_option("4/5", options) == "4"
    assert leading_option("No", options) is None


def test_read_option_outcomes():
    assert read_option(None, ("Yes", "No")).outcome == "failed"
    assert read_option("", ("Yes", "No")).outcome == "failed"
    # issue 18: only an empty answer is a failed request; a blank one is an answer that cannot be read
    assert read_option("  ", ("Yes", "No")).outcome == "unparseable"
    assert read_option("maybe", ("Yes", "No")).outcome == "unparseable"
    d = read_option("No", ("Yes", "No"))
    assert (d.outcome, d.option, d.probs) == ("ok", "No", None)


@pytest.mark.parametrize("stage, text, expected", [
    ("detection", "Yes", "Yes"),                                   # the prefix gives the label
    ("detection", 'No{"aspect": "x"}', "No"),
    ("detection", "Yes or No", None),                              # an echo of the options
    ("detection", "No, wait.\nAnswer: Yes", "Yes"),                 # the last labelled answer
    ("detection", "nope", "No"),
    ("detection", "Noticeable flaw", None),                        # word-bounded
    ("eligibility", "Eligible", "Yes"), ("eligibility", "N/A", "No"), ("eligibility", "Not eligible", "No"),
    ("severity", "Major and minor", None), ("severity", "minor.", "Minor"),
    ("severity", "Severity: Major\nReason: the main subject.", "Major"),
])
def test_generated_decisions_are_read_after_the_prefix_label(stage, text, expected):
    options = ("Major", "Minor") if stage == "severity" else ("Yes", "No")
    d = read_option(text, options, "Answer:\n", stage)
    assert (d.option, d.outcome) == (expected, "ok" if expected else "unparseable")


def test_a_bare_value_needs_a_labelled_prefix():
    assert read_option("Yes", ("Yes", "No"), "", "detection").option == "Yes"  # unlabelled prefix: leading word
    assert labelled_option("Yes", ("Yes", "No"), "detection") is None           # no label at all: not read
    assert labelled_option("**Answer**: [No]", ("Yes", "No"), "detection") == "No"
    with pytest.raises(ValueError, match="no labelled answer"):
        labelled_option("Answer: 4", ("1", "2"), "holistic")


def test_json_readers():
    assert first_json_object('Yes{"aspect": "cup", "evidence": "It floats."} trailing') == {
        "aspect": "cup", "evidence": "It floats."}
    assert first_json_object("no json {here") is None
    assert first_json_object('[1] {"a": 1}') == {"a": 1}
    ev = parse_evidence('{"aspect": " cup\t", "evidence": "Line\nbreak."}')  # raw control characters
    assert ev.aspect == "cup" and ev.evidence == "Line\nbreak."
    assert parse_evidence('{"aspect": "cup"}') is None
    assert parse_evidence('{"aspect": "", "evidence": "x"}') is None
    assert parse_reason('{"reason": "A chart."}').reason == "A chart."
    assert parse_reason('{"reason": 3}') is None
