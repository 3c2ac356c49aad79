"""Constraint -> grammar: bounds, strict JSON strings, EBNF passthrough, lazy import."""
import json
import re
import subprocess
import sys

import pytest
from pydantic import BaseModel, Field

from vlmjudge import Constraint
from vlmjudge.grammar import (DEFAULT_MAX_ITEMS, DEFAULT_MAX_STRING, ConstraintCompiler, bounded_schema,
                              constraint_to_ebnf, json_schema_to_ebnf, server_json_schema)


class Inner(BaseModel):
    note: str
    level: str = Field(max_length=5)


class Outer(BaseModel):
    kind: str = Field(json_schema_extra={"enum": ["a", "b"]})
    items: list[Inner]
    words: list[str] = Field(max_length=3)


def test_bounded_schema_bounds_only_what_is_unbounded():
    schema = Outer.model_json_schema()
    out = bounded_schema(schema, max_string=7, max_items=4)
    inner = out["$defs"]["Inner"]["properties"]
    assert inner["note"]["maxLength"] == 7          # unbounded string, inside $defs
    assert inner["level"]["maxLength"] == 5         # already bounded: kept
    assert "maxLength" not in out["properties"]["kind"]  # enum: not a free string
    assert out["properties"]["items"]["maxItems"] == 4
    assert out["properties"]["words"]["maxItems"] == 3
    assert out["properties"]["words"]["items"]["maxLength"] == 7
    assert "maxLength" not in schema["$defs"]["Inner"]["properties"]["note"]  # input untouched
    defaults = bounded_schema({"type": "array", "items": {"type": "string"}})
    assert defaults == {"type": "array", "maxItems": DEFAULT_MAX_ITEMS,
                        "items": {"type": "string", "maxLength": DEFAULT_MAX_STRING}}
    with pytest.raises(ValueError):
        bounded_schema(schema, max_string=0)


@pytest.fixture(scope="module")
def compiler(loaded):
    judge = loaded["qwen3_vl"]
    return ConstraintCompiler(judge.tokenizer, judge.vocab_size, judge.eos_ids)


def _accepts(compiler, constraint, text):
    matcher = compiler.matcher(constraint)
    return matcher.accept_string(text) and matcher.is_completed()


def test_json_strings_refuse_raw_control_characters_and_lone_surrogates(compiler):
    class Note(BaseModel):
        text: str = Field(max_length=10)
        free: list[str]

    c = Constraint.json_schema(Note)  # properties come in schema order: text, then free
    assert _accepts(compiler, c, '{"text": "a b \'q\' é", "free": ["x y"]}')
    assert not _accepts(compiler, c, '{"text": "a\tb", "free": ["x"]}')      # raw tab in a bounded string
    assert not _accepts(compiler, c, '{"text": "a\\tb", "free": ["x"]}')    # bounded strings have no escapes
    assert not _accepts(compiler, c, '{"text": "\\"q\\"", "free": ["x"]}')
    assert not _accepts(compiler, c, '{"text": "a", "free": ["a\x01"]}')     # raw control in a default-bounded one
    assert not _accepts(compiler, c, '{"text": "\\ud800", "free": ["x"]}')   # \u escapes are not produced
    assert not _accepts(compiler, c, '{"text": "12345678901", "free": ["x"]}')  # maxLength 10
    assert not _accepts(compiler, c, '{"text": "a", "free": ["x"], "extra": 1}')  # no extra keys
    assert not _accepts(compiler, c, '{"free": ["x"], "text": "a"}')  # not in schema order
    ok = '{"text": "a", "free": ["x"]}'
    Note.model_validate_json(ok, strict=True)
    assert _accepts(compiler, c, ok)


def test_ebnf_text_for_servers():
    grammar = 'root ::= "Yes" | "No"'
    assert constraint_to_ebnf(Constraint.ebnf(grammar)) == grammar
    ebnf = constraint_to_ebnf(Constraint.json_schema({"type": "object", "properties": {"a": {"type": "string"}},
                                                      "required": ["a"]}))
    assert "root ::=" in ebnf and "{0, 1000}" in ebnf
    # a bounded string repeats one character class: xgrammar's constant-time path (module doc)
    # (surrogates excluded: their bytes would decode to U+FFFD and break maxLength)
    assert re.search(r'^\w+_characters ::= \[\^\\0-\\x1f\\"\\\\\\uD800-\\uDFFF\]$', ebnf, re.M), ebnf
    assert json_schema_to_ebnf({"type": "string"}, bound=False).startswith("basic_escape ::=")
    schema = server_json_schema(Constraint.json_schema({"type": "string"}))
    assert schema == {"type": "string", "maxLength": DEFAULT_MAX_STRING}


def test_bad_constraints_are_clear_errors(compiler):
    with pytest.raises(ValueError, match="cannot compile"):
        compiler.compile(Constraint.ebnf("root ::= ("))
    with pytest.raises(ValueError):
        ConstraintCompiler(object(), 10, [])


def test_import_vlmjudge_does_not_import_xgrammar():
    code = ("import sys, vlmjudge, vlmjudge.grammar, vlmjudge.backends.hf.judge\n"
            "assert 'xgrammar' not in sys.modules, 'xgrammar imported eagerly'\n"
            "assert 'torch' not in sys.modules, 'torch imported eagerly'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_schema_s_grammar_is_written_once_and_is_the_schema_s_own():
    """`constraint_to_ebnf` keeps a schema's grammar by its text: asked again it gives the same
    text without converting again, and it is what `json_schema_to_ebnf` writes for that schema."""
    from vlmjudge.grammar import _schema_text_to_ebnf
    schema = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"enum": ["keep", "drop"]},
                                                                          "why": {"type": "string"}}}
    constraint = Constraint.json_schema(schema)
    first = constraint_to_ebnf(constraint)
    hits = _schema_text_to_ebnf.cache_info().hits
    assert constraint_to_ebnf(Constraint.json_schema(schema)) == first == json_schema_to_ebnf(schema)
    assert _schema_text_to_ebnf.cache_info().hits == hits + 1
