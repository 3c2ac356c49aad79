"""A benchmark's run files read for its leaderboard: every file checked before any number is
computed, each record tied to its prompt, and the prompts every run holds chosen for pairing.

A leaderboard that averaged another method's file, an Infinity score or a run scored with another
judge would rank models on different evidence, so each is a `LeaderboardError` (one line naming
the file); a prompt some run lacks is listed and left out of every paired statistic, never scored.
Record ids are the suite's prompt ids, or `<prompt id>/<k>` for the k-th image of a prompt. Files are read
through `vlmjudge.run_records`, the one checked reader `compare` and `agreement` use.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vlmjudge.registry import get_method
from vlmjudge.run_records import RunFileError, in_score_range, iter_run_records, run_manifest
from vlmjudge.stats.runs import mixed_reasons
from vlmjudge.stats.statistic import Statistic

from .suites.suite import PromptSuite

#: How many ids an error message lists before it says how many more there are.
SHOWN = 5


class LeaderboardError(ValueError):
    """Runs, a suite or settings a leaderboard cannot be built from; the message is one line."""


@dataclass
class Run:
    """One model's run of one method: its records, manifest, and each record's row of the method's
    headline statistic (None: not applicable, NaN: failed) grouped by prompt id."""

    model: str
    method: str
    path: str
    records: list[dict[str, Any]]
    manifest: dict[str, Any]
    by_prompt: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)


@dataclass
class MethodRuns:
    """One method's runs, one per model, and the statistic its leaderboard rows report."""

    name: str
    statistic_key: str
    statistic: Statistic
    runs: dict[str, Run]


@dataclass
class BenchmarkRuns:
    """Every run checked, and the prompts each model lacks: `paired` are the suite's prompts (in
    suite order) every run holds, the prompts every statistic is computed on."""

    models: list[str]
    methods: list[MethodRuns]
    paired: list[str]
    missing: dict[str, list[str]]


def shown(ids: list[str]) -> str:
    """A few ids for a one-line message, with how many more there are."""
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(repr(i) for i in ids[:SHOWN]) + more


def _name(value: Any, what: str) -> str:
    """A model or method name: non-empty text."""
    if not isinstance(value, str) or not value.strip():
        raise LeaderboardError(f"a {what} name must be non-empty text, got {value!r}")
    return value


def _layout(runs: Any) -> tuple[list[str], list[str]]:
    """The models and methods of `runs` ({model: {method: path}}), every model with every method."""
    if not isinstance(runs, Mapping) or not runs:
        raise LeaderboardError("runs must map each model to its runs ({model: {method: records.jsonl}}), got "
                               f"{type(runs).__name__}{'' if runs else ' (empty)'}")
    models = [_name(model, "model") for model in runs]
    methods: list[str] | None = None
    for model in models:
        given = runs[model]
        if not isinstance(given, Mapping) or not given:
            raise LeaderboardError(f"model {model!r}: give its runs as {{method: records.jsonl}}, got {given!r}")
        names = [_name(method, "method") for method in given]
        if methods is None:
            methods = names
        elif set(names) != set(methods):
            lacking = sorted(set(methods) ^ set(names))
            raise LeaderboardError(f"every model needs a run of every method: model {model!r} differs from "
                                   f"{models[0]!r} in {shown(lacking)}")
    return models, list(methods or [])


def headline(method: str) -> tuple[str, Statistic, tuple[float, float]]:
    """A registered method's headline statistic (its first ungrouped one) and its score range."""
    try:
        spec = get_method(method)
    except KeyError as error:
        raise LeaderboardError(str(error.args[0])) from None
    except (ImportError, TypeError) as error:
        raise LeaderboardError(f"method {method!r} cannot be loaded: {error}") from None
    ungrouped = [(key, stat) for key, stat in spec.statistics.items() if stat.group is None]
    if not ungrouped:
        raise LeaderboardError(f"method {method!r} declares no statistic to rank models by")
    key, statistic = ungrouped[0]
    return key, statistic, tuple(float(v) for v in spec.score_range)


def _read(path: Any, model: str, method: str, score_range: tuple[float, float]) -> tuple[list[dict], list[str], dict]:
    """A run file's records, where each was read, and its manifest, through the one checked reader of
    run files (`vlmjudge.run_records`: a missing file, a folder, a broken line, the record schema, NaN
    or Infinity anywhere, an id given twice, a score outside the method's range, an empty run); each
    refusal is one line, as is an absent manifest or one naming another method."""
    if not isinstance(path, (str, os.PathLike)):
        raise LeaderboardError(f"run of {model!r} by {method!r}: expected a path to records.jsonl, got {path!r}")
    file = Path(path)
    try:
        manifest = run_manifest(file)
        if not manifest:
            raise LeaderboardError(f"{file}: no manifest beside it ({file.stem}.manifest.json): a leaderboard needs "
                                   "to know which method and judge scored each run")
        if manifest.get("method") != method:
            raise LeaderboardError(f"{file} is given as the {method} run of {model!r}, but its manifest says method "
                                   f"{manifest.get('method')!r}")
        read = list(in_score_range(iter_run_records(file), score_range, method))
    except UnicodeDecodeError as error:
        raise LeaderboardError(f"{file} (run of {model!r} by {method!r}) is not UTF-8 text "
                               f"({error.reason} at byte {error.start})") from None
    except RunFileError as error:
        raise LeaderboardError(f"run of {model!r} by {method!r}: {error}") from None
    return [record for record, _ in read], [where for _, where in read], manifest


def _row(record: dict, where: str, statistic: Statistic) -> Any:
    """The record's row of the statistic (the record itself is checked by `_read`): None for N/A,
    else numbers, none infinite."""
    try:
        row = statistic.rows(record)
        if row is None:
            return None
        values = np.atleast_1d(np.asarray(row, dtype=float))
    except (KeyError, TypeError, ValueError, OverflowError) as error:
        raise LeaderboardError(f"{where}: the statistic {statistic.label!r} cannot read it ({error})") from None
    if values.ndim != 1 or np.isinf(values).any():
        raise LeaderboardError(f"{where}: the statistic {statistic.label!r} reads {values.tolist()} from it; "
                               "a row is finite numbers")
    return values.tolist()


def _prompt_of(record_id: str, prompts: set[str]) -> str | None:
    """The prompt a record id names (`<prompt id>` or `<prompt id>/<k>`), or None when it names none."""
    prompt, slash, k = record_id.partition("/")
    if prompt not in prompts or (slash and (not k or "/" in k)):
        return None
    return prompt


def read_method_run(path: Any, model: str, method: str, statistic: Statistic, score_range: tuple[float, float],
                    prompts: set[str], suite_name: str) -> Run:
    """One run, checked record by record (`_read`) and grouped by prompt; records of prompts the
    suite lacks are refused."""
    records, places, manifest = _read(path, model, method, score_range)
    run = Run(model, method, str(path), records, manifest)
    strangers: list[str] = []
    for record, where in zip(records, places):
        row = _row(record, where, statistic)
        record_id = record["id"]
        prompt = _prompt_of(record_id, prompts)
        if prompt is None:
            strangers.append(record_id)
            continue
        run.by_prompt.setdefault(prompt, []).append((record_id, row))
    if strangers:
        raise LeaderboardError(f"{path}: record ids {shown(strangers)} name no prompt of suite {suite_name!r} "
                               "(ids are the prompt ids, or <prompt id>/<k>)")
    return run


def _suite_ids(suite: Any) -> tuple[list[str], str]:
    """The suite's prompt ids in suite order, and its name."""
    if not isinstance(suite, PromptSuite):
        raise LeaderboardError(f"suite must be a PromptSuite (vlmjudge.benchmark.suites), got {type(suite).__name__}")
    return suite.ids(), suite.name


def read_runs(runs: Any, suite: Any) -> BenchmarkRuns:
    """Every run of `runs` ({model: {method: records.jsonl}}) read and checked against `suite`, and
    the prompts to pair on: those every run holds a record of."""
    models, method_names = _layout(runs)
    prompt_ids, suite_name = _suite_ids(suite)
    known = set(prompt_ids)
    files: dict[str, tuple[str, str]] = {}
    methods = []
    for method in method_names:
        key, statistic, score_range = headline(method)
        checked = {}
        for model in models:
            path = runs[model][method]
            run = read_method_run(path, model, method, statistic, score_range, known, suite_name)
            resolved = str(Path(path).resolve())
            if resolved in files:
                raise LeaderboardError(f"{path} is given twice: as the {files[resolved][1]} run of "
                                       f"{files[resolved][0]!r} and the {method} run of {model!r}")
            files[resolved] = (model, method)
            checked[model] = run
        reasons = mixed_reasons([run.manifest for run in checked.values()], models)
        if reasons:
            raise LeaderboardError(f"the {method} runs were not scored alike: " + "; ".join(reasons))
        methods.append(MethodRuns(method, key, statistic, checked))
    missing = {model: [p for p in prompt_ids if any(p not in m.runs[model].by_prompt for m in methods)]
               for model in models}
    lacking = {p for ids in missing.values() for p in ids}
    paired = [p for p in prompt_ids if p not in lacking]
    if not paired:
        raise LeaderboardError(f"no prompt of suite {suite_name!r} has a record in every run, so nothing pairs "
                               f"the models (missing: {'; '.join(f'{m}: {len(ids)}' for m, ids in missing.items())})")
    return BenchmarkRuns(models, methods, paired, missing)
