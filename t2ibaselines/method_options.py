"""`--method-option KEY=VALUE`: a registered method's own settings from the command line.

The keys a method takes are those of its `MethodSpec.config` (their values there are the
defaults), so a typo fails before any image is read. A value is read as a JSON literal where it
is one (`true`, `3`, `0.5`, `null`, `["a", "b"]`) and as text otherwise (`pack=strict-v2`,
`qa=data/qa.json`); NaN and Infinity are refused rather than passed on as numbers.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from vlmjudge.registry import MethodSpec


class _NotFinite(ValueError):
    """A JSON constant (NaN, Infinity) given as an option's value."""


def _refuse(name: str) -> None:
    raise _NotFinite(name)


def option_value(text: str) -> Any:
    """The value `text` stands for: a JSON literal, else the text as given.

    Examples:
        >>> option_value("true"), option_value("0.5"), option_value("strict-v2"), option_value('["a", "b"]')
        (True, 0.5, 'strict-v2', ['a', 'b'])
        >>> option_value("NaN")
        Traceback (most recent call last):
        ...
        ValueError: NaN is not a value an option takes (only finite numbers)
    """
    try:
        return json.loads(text, parse_constant=_refuse)
    except _NotFinite as error:
        raise ValueError(f"{error} is not a value an option takes (only finite numbers)") from None
    except json.JSONDecodeError:
        return text


def method_options(pairs: Iterable[str], spec: MethodSpec) -> dict[str, Any]:
    """The options `pairs` set, each key one of the method's (`spec.config`), each at most once.

    Examples:
        >>> from vlmjudge.registry import MethodSpec
        >>> spec = MethodSpec(name="toy", inputs=("image",), build=dict, score_range=(0.0, 1.0), render=dict,
        ...                   config={"pack": None, "verify": True})
        >>> method_options(["verify=false", "pack=mine.json"], spec)
        {'verify': False, 'pack': 'mine.json'}
        >>> method_options(["packs=mine.json"], spec)
        Traceback (most recent call last):
        ...
        ValueError: --method-option packs: toy takes pack, verify
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--method-option {pair!r}: write KEY=VALUE")
        if key not in spec.config:
            takes = ", ".join(sorted(spec.config)) or "no options"
            raise ValueError(f"--method-option {key}: {spec.name} takes {takes}")
        if key in out:
            raise ValueError(f"--method-option {key} is given twice")
        try:
            out[key] = option_value(text)
        except ValueError as error:
            raise ValueError(f"--method-option {key}: {error}") from None
    return out


__all__ = ["method_options", "option_value"]
