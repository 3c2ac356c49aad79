"""Prompt suites for a benchmark: named public sets (`load_suite`, `SUITES`) and your own file
(`read_prompts`), each read into a `PromptSuite` of `SuitePrompt`s with ids, prompts, category tags,
reference images where the set has them, and the card's facts. docs/suites.md has a card per suite.

Every failure is a `SuiteError` (a ValueError) with a one-line message; an unreachable source
raises `SuiteUnavailableError`, whose message names `--suite-file`.
"""
from __future__ import annotations

from vlmjudge.lazy import lazy_exports

_EXPORTS = {
    "load_suite": ".registry", "SUITES": ".registry", "SuiteSpec": ".registry", "Subset": ".registry",
    "read_prompts": ".custom", "PromptSuite": ".suite", "SuitePrompt": ".suite", "SuiteError": ".suite",
    "SuiteFormatError": ".suite", "SuiteUnavailableError": ".suite", "UnknownSuiteError": ".suite",
    "HubFile": ".sources", "WebFile": ".sources",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
