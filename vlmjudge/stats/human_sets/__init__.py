"""Readers for public human-judgment sets, one module a set, each giving the same row shape.

A row is a dict with `id`, `prompt`, `image` (the path inside the set's download), `human` (one
float, higher is better) and, where the set has them, `raters` (each person's score), `system`
(the generator) and `prompt_id` (to pass as `groups` so a prompt's images resample together).
Nothing is downloaded here: point a reader at the file the set's page lets you fetch. A set whose
authors measure a judge their own way besides correlations (T2IScoreScore, per error graph) names
that measure in `SET_STATISTICS`, and `public_set_statistics` computes it.
"""
from __future__ import annotations

import importlib
from typing import Any

#: The public sets by the name `--human-format` takes: name -> (module here, its reader function).
PUBLIC_SETS = {"genai-bench": ("genai_bench", "read_genai_bench"), "evalmuse": ("evalmuse", "read_evalmuse"),
               "tifa": ("tifa", "read_tifa"), "t2iscorescore": ("t2iscorescore", "read_t2iscorescore")}
#: The sets' own statistics: name -> (module here, a function of (all rows, id -> judge score, **options)).
SET_STATISTICS = {"t2iscorescore": ("error_graphs", "error_graph_statistics")}


def read_public_set(name: str, path: Any) -> list[dict[str, Any]]:
    """The rows of the public set `name` read from `path`, through that set's reader (loaded only now).

    Examples:
        >>> read_public_set("crowd-guess", "x.json")
        Traceback (most recent call last):
        ...
        KeyError: "no public human set 'crowd-guess'; these are ['evalmuse', 'genai-bench', 't2iscorescore', 'tifa']"
    """
    if name not in PUBLIC_SETS:
        raise KeyError(f"no public human set {name!r}; these are {sorted(PUBLIC_SETS)}")
    module, reader = PUBLIC_SETS[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), reader)(path)


def public_set_statistics(name: str, rows: list[dict[str, Any]], judge: dict[str, float],
                          **options: Any) -> dict[str, Any] | None:
    """The set's own statistics of a judge (None for a set that has none): `rows` are all the
    set's rows, `judge` maps a row id to the judge's score for the rows it scored, and `options`
    (`n_resamples`, `confidence`, `seed`) set the intervals.

    Examples:
        >>> public_set_statistics("tifa", [], {}) is None
        True
    """
    if name not in SET_STATISTICS:
        return None
    module, function = SET_STATISTICS[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), function)(rows, judge, **options)
