"""Output constraints (JSON schema, EBNF) turned into grammars a decoder can enforce.

Backends hand a `Constraint` here: the in-process backend compiles it with xgrammar (imported
lazily) and masks logits token by token; a server backend sends `constraint_to_ebnf` or
`server_json_schema` instead. Strings are kept free of raw control characters and lone
surrogates, and every string and array is bounded so that constrained output parses strictly and
closes within its token budget; docs/constraints.md gives the reasons and the measured costs.
`first_options` (see `Constraint`) is applied by the backend, not by the grammar.
"""
from __future__ import annotations

import copy
import functools
import json
import re
from typing import TYPE_CHECKING, Any, Iterable

from .requests import Constraint

if TYPE_CHECKING:  # pragma: no cover
    import xgrammar

#: Bounds added where a schema leaves strings or arrays unbounded (characters / items).
DEFAULT_MAX_STRING = 1000
DEFAULT_MAX_ITEMS = 64

# xgrammar 0.2.9 writes a maxLength string's character rule as this class, which lets raw
# control characters (tab, \x00...) through and has no escapes.
_LOOSE_CHAR_RULE = re.compile(r'^(\w+_characters) ::= \(\(\[\^\\"\\\\\\r\\n\]\)\)$', re.M)
# One class (see the module doc for why no escapes). UTF-16 surrogates are excluded: their
# UTF-8 bytes are not text, a tokenizer decodes them to U+FFFD (one per byte), and a string
# of maxLength characters would come back longer.
_STRICT_CHAR = r'[^\0-\x1f\"\\\uD800-\uDFFF]'
# xgrammar's unbounded string character (used by free-form JSON values), and the same
# class without surrogates.
_BASIC_CHAR = '[^\\0-\\x1f\\"\\\\\\r\\n]'
_BASIC_CHAR_STRICT = '[^\\0-\\x1f\\"\\\\\\r\\n\\uD800-\\uDFFF]'
# JSON escapes without \u, for unbounded strings: a \u escape could name a lone surrogate,
# which strict parsers reject; any character can be written raw instead.
_ESCAPE_RULE = r'vj_escape ::= [\"\\/bfnrt]'
# A bounded string with minLength >= 1 starts with a character that is not whitespace (none
# of the characters Python's str.strip removes), so it is never blank: a schema that asks
# for at least one character asks for text, and a validator that rejects blank strings
# (FAGER's facts) accepts every output.
_FIRST_RULE = (r'vj_first_char ::= [^\0-\x20\"\\\x85\xa0\u1680\u2000-\u200a\u2028\u2029'
               r'\u202f\u205f\u3000\uD800-\uDFFF]')
_NONEMPTY_STRING = re.compile(r'"\\"" (\w+_characters)\{(\d+), (\d+)\} "\\""')
_BASIC_ESCAPE = re.compile(r"^basic_escape ::= .*$", re.M)


#: Bumped whenever the rules above change what constrained decoding can write (surrogates and blank
#: strings refused, the closing guarantee): part of a judge's cache identity, so answers decoded under
#: other rules are never served again.
GRAMMAR_VERSION = 2


def bounded_schema(schema: dict[str, Any], max_string: int = DEFAULT_MAX_STRING,
                   max_items: int = DEFAULT_MAX_ITEMS) -> dict[str, Any]:
    """A copy of `schema` where every string without `maxLength` (and without enum, const or
    pattern) gets `maxLength=max_string` and every array without `maxItems` gets `maxItems`.

    Examples:
        >>> schema = {"type": "object", "properties": {"note": {"type": "string"},
        ...           "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}}}
        >>> out = bounded_schema(schema, max_string=200, max_items=4)
        >>> out["properties"]["note"], out["properties"]["tags"]["maxItems"]
        ({'type': 'string', 'maxLength': 200}, 4)
        >>> "maxLength" in out["properties"]["tags"]["items"]
        False
    """
    if max_string < 1 or max_items < 1:
        raise ValueError("max_string and max_items must be >= 1")
    out = copy.deepcopy(schema)
    for node in schema_nodes(out):
        types = node.get("type")
        types = types if isinstance(types, list) else [types]
        if "string" in types and not {"maxLength", "enum", "const", "pattern", "format"} & node.keys():
            node["maxLength"] = max_string
        if "array" in types and "maxItems" not in node and "prefixItems" not in node:
            node["maxItems"] = max_items
    return out


def schema_nodes(node: Any) -> Iterable[dict[str, Any]]:
    """Every dict in a JSON schema (sub-schemas, $defs, items, anyOf branches...), parents
    first, so a caller may edit each node in place as it comes.

    Examples:
        >>> schema = {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}}
        >>> [node.get("type") for node in schema_nodes(schema)]
        ['array', None, 'string', 'null']
    """
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from schema_nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from schema_nodes(value)


def json_schema_to_ebnf(schema: dict[str, Any], *, bound: bool = True) -> str:
    """xgrammar EBNF for a JSON schema: one-line JSON, no extra keys, strict strings.

    Examples:
        >>> ebnf = json_schema_to_ebnf({"type": "object", "required": ["answer"],
        ...                             "properties": {"answer": {"enum": ["Yes", "No"]}}})
        >>> "root ::=" in ebnf and "vj_escape ::=" in ebnf
        True
    """
    xgr = _xgrammar()
    if bound:
        schema = bounded_schema(schema)
    grammar = xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, strict_mode=True)
    return _strict_strings(str(grammar))


def _strict_strings(ebnf: str) -> str:
    ebnf, n_basic = _BASIC_ESCAPE.subn(lambda m: "basic_escape ::= vj_escape", ebnf)
    if n_basic != 1:
        raise RuntimeError("xgrammar's JSON grammar changed shape (no basic_escape rule); "
                           "update vlmjudge.grammar before trusting strict strings")
    ebnf = _LOOSE_CHAR_RULE.sub(lambda m: f"{m.group(1)} ::= {_STRICT_CHAR}", ebnf)
    ebnf = ebnf.replace(_BASIC_CHAR, _BASIC_CHAR_STRICT)
    if re.search(r'\[\^\\"\\\\\\r\\n\]', ebnf):
        raise RuntimeError("xgrammar's JSON string rule changed shape; update vlmjudge.grammar")
    ebnf = _NONEMPTY_STRING.sub(_first_not_blank, ebnf)
    return ebnf + "\n" + _ESCAPE_RULE + "\n" + _FIRST_RULE + "\n"


def _first_not_blank(match: re.Match) -> str:
    rule, low, high = match.group(1), int(match.group(2)), int(match.group(3))
    if low < 1:
        return match.group(0)
    return f'"\\"" vj_first_char {rule}{{{low - 1}, {high - 1}}} "\\""'


def constraint_to_ebnf(constraint: Constraint) -> str:
    """The grammar text of a constraint (xgrammar EBNF), for engines that take a grammar.

    Examples:
        >>> constraint_to_ebnf(Constraint.ebnf('root ::= "Yes" | "No"'))
        'root ::= "Yes" | "No"'
    """
    if constraint.kind == "ebnf":
        return constraint.spec
    if constraint.kind == "json_schema":
        return _schema_text_to_ebnf(constraint.spec)
    raise ValueError(f"unknown constraint kind {constraint.kind!r}")


@functools.lru_cache(maxsize=256)
def _schema_text_to_ebnf(spec: str) -> str:
    """`json_schema_to_ebnf` by the schema's text. Why cached: a served run writes the grammar of
    every request it sends, and a method asks the same few schemas hundreds of times."""
    return json_schema_to_ebnf(json.loads(spec))


def server_json_schema(constraint: Constraint) -> dict[str, Any]:
    """The bounded JSON schema to send as an OpenAI-style `response_format` schema.

    Examples:
        >>> server_json_schema(Constraint.json_schema({"type": "string"}))
        {'type': 'string', 'maxLength': 1000}
    """
    return bounded_schema(constraint.schema)


class ConstraintCompiler:
    """Compiles constraints once per tokenizer and hands out fresh matchers.

    `vocab_size` is the model's logit width (it may exceed the tokenizer's); `stop_token_ids`
    are the ids that end generation, which the grammar allows once its text is complete.
    """

    def __init__(self, tokenizer: Any, vocab_size: int, stop_token_ids: list[int]) -> None:
        xgr = _xgrammar()
        if not stop_token_ids:
            raise ValueError("constrained decoding needs at least one stop token id")
        self.vocab_size = vocab_size
        self.stop_token_ids = list(stop_token_ids)
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size,
                                                  stop_token_ids=self.stop_token_ids)
        self.tokenizer_info = info  # its decoded vocabulary writes closing text as tokens
        self._compiler = xgr.GrammarCompiler(info)
        self._compiled: dict[tuple[str, str], Any] = {}

    def compile(self, constraint: Constraint) -> "xgrammar.CompiledGrammar":
        """The compiled grammar (cached by constraint text); bad grammars raise ValueError."""
        key = (constraint.kind, constraint.spec)
        if key not in self._compiled:
            try:
                self._compiled[key] = self._compiler.compile_grammar(constraint_to_ebnf(constraint))
            except RuntimeError as exc:
                raise ValueError(f"cannot compile {constraint.kind} constraint: {exc}") from exc
        return self._compiled[key]

    def matcher(self, constraint: Constraint) -> "xgrammar.GrammarMatcher":
        """A fresh matcher for one sequence."""
        return _xgrammar().GrammarMatcher(self.compile(constraint))


def _xgrammar():
    try:
        import xgrammar
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("constrained decoding needs xgrammar: pip install xgrammar") from exc
    return xgrammar
