"""Deprecation aliases for modules and keywords that moved, kept for one release (see CHANGELOG.md).

An old module file becomes two lines that make its name the *same* module object as the new one,
private names and monkeypatch targets included, so old imports behave exactly as before:

    from vlmjudge._moved import alias_module
    alias_module(__name__, "viescore2.core")
"""
from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any


def alias_module(old_name: str, new_name: str) -> None:
    """Point `sys.modules[old_name]` at the module `new_name`, with a DeprecationWarning.

    Python's import system returns whatever sits in `sys.modules` once the old file has run, so
    `import old` and `from old import x` both get the new module itself, not a copy of its names.
    """
    warnings.warn(f"{old_name} moved to {new_name}; the old name is removed in the next release",
                  DeprecationWarning, stacklevel=3)
    sys.modules[old_name] = importlib.import_module(new_name)


def renamed_keywords(kwargs: dict[str, Any], renames: dict[str, str], where: str) -> dict[str, Any]:
    """Return `kwargs` with old keyword names replaced by their new names, warning for each one.

    Giving both the old and the new name is an error: which one the caller meant is unknowable.

    Examples:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     renamed_keywords({"judge_model": "m", "cache": None}, {"judge_model": "model"}, "f")
        {'cache': None, 'model': 'm'}
    """
    out = dict(kwargs)
    for old, new in renames.items():
        if old not in out:
            continue
        if new in out:
            raise TypeError(f"{where}: pass {new}= only; {old}= is its deprecated name")
        warnings.warn(f"{where}: {old}= is deprecated; use {new}=", DeprecationWarning, stacklevel=3)
        out[new] = out.pop(old)
    return out
