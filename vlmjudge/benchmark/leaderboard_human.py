"""Each method's agreement with people on a benchmark, over all models and per model under test,
as TerraVis' Table 2 reports it (a metric that follows people on one model may not on another).

People's labels are read as `vlmjudge agreement` reads them: the annotation app's label lines
(rated by the labels' method's `HumanProtocol`) or a public set's file. A label names its image by
model and record id: a `model` field (label lines) or `system` field (public sets) with the
record id (the set's `prompt_id`), or an id `<model>/<record id>`. Each method's records are matched
by its own protocol; labels naming no model under test are counted, not guessed.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmjudge.registry import get_method
from vlmjudge.stats.correlation import too_few
from vlmjudge.stats.human_agreement import STATISTICS, agreement
from vlmjudge.stats.human_sets import PUBLIC_SETS, read_public_set
from vlmjudge.stats.human_sets.join import index_records, join
from vlmjudge.stats.human_sets.protocol import GENERIC, HumanProtocol, no_details, only_value, single_source

from .leaderboard_runs import BenchmarkRuns, LeaderboardError, shown

#: `--human-format` values: the annotation app's label lines, or a public set `vlmjudge agreement` reads.
HUMAN_FORMATS = ("labels", *PUBLIC_SETS)


@dataclass
class People:
    """People's labels placed on the benchmark: each row with its `model` and `record_id`; `unplaced`
    are the ids of labels that name no model under test."""

    path: str
    format: str
    labels_method: str | None
    rows: list[dict[str, Any]]
    unplaced: list[str]


def _protocol(method: str | None) -> HumanProtocol:
    """A method's human protocol (the generic one for no method, or a method that declares none)."""
    if method is None:
        return GENERIC
    try:
        return get_method(method).human or GENERIC
    except (KeyError, ImportError, TypeError) as error:
        reason = error.args[0] if isinstance(error, KeyError) else error
        raise LeaderboardError(f"the labels' method {method!r}: {reason}") from None


def _label_rows(path: Path) -> tuple[list[dict], str | None]:
    """Rows of the annotation app's label lines; a line's `model` field goes into its id first, so
    two models' labels of one prompt stay two items."""
    from vlmjudge.outputs import read_jsonl
    from vlmjudge.stats.human_sets.labels import label_method, label_rows

    lines = read_jsonl(path)
    if not lines:
        raise LeaderboardError(f"{path} holds no labels")
    method = label_method(lines)
    placed = [{**line, "id": f"{line['model']}/{line['id']}"}
              if isinstance(line.get("model"), str) and line.get("id") is not None else line for line in lines]
    return label_rows(placed, _protocol(method), where=str(path)), method


def _place(row: dict, models: set[str]) -> tuple[str, str] | None:
    """(model, record id) a human row is about, or None when it names no model under test."""
    system = row.get("system")
    if isinstance(system, str) and row.get("prompt_id") is not None:
        return (system, str(row["prompt_id"])) if system in models else None
    model, slash, record_id = str(row["id"]).partition("/")
    return (model, record_id) if slash and record_id and model in models else None


def read_human(human: Any, bench: BenchmarkRuns) -> People:
    """People's labels from `human` = (path, format), placed on the benchmark's models; an unreadable
    file, an unknown format or labels that name no model under test is one line."""
    if not isinstance(human, (tuple, list)) or len(human) != 2:
        raise LeaderboardError(f"human must be (path, format), got {human!r}")
    raw_path, form = human
    if form not in HUMAN_FORMATS:
        raise LeaderboardError(f"human format {form!r} is not one of {', '.join(HUMAN_FORMATS)}")
    if not isinstance(raw_path, (str, os.PathLike)):
        raise LeaderboardError(f"human labels: expected a path, got {raw_path!r}")
    path = Path(raw_path)
    if form == "labels" and path.is_dir():
        raise LeaderboardError(f"human labels {path} is a folder, not a labels file")
    try:
        if form == "labels":
            rows, method = _label_rows(path)
        else:
            rows = read_public_set(form, path)
            method = None
    except (OSError, KeyError, ValueError) as error:  # UnicodeDecodeError and JsonlError are ValueErrors
        reason = error.args[0] if isinstance(error, KeyError) and error.args else error
        raise LeaderboardError(f"cannot read human labels {path}: {' '.join(str(reason).split())}") from None
    models = set(bench.models)
    placed, unplaced = [], []
    for row in rows:
        target = _place(row, models)
        if target is None:
            unplaced.append(str(row["id"]))
        else:
            placed.append({**row, "model": target[0], "record_id": target[1]})
    _one_image_each(placed, form, path)
    if not placed:
        raise LeaderboardError(f"no label in {path} names a model under test ({', '.join(bench.models)}); a label "
                               f"names one by a 'model' or 'system' field or an id '<model>/<record id>' "
                               f"(ids seen: {shown(unplaced)})")
    return People(str(path), form, method, placed, unplaced)


def _one_image_each(placed: list[dict], form: str, path: Path) -> None:
    """Refuse labels of several images placed on one record (T2IScoreScore holds many images per
    generator and prompt): a benchmark scores one image per prompt and model, so pairing those
    labels with it would mix other images' labels into its agreement."""
    images: dict[tuple[str, str], set[str]] = {}
    for row in placed:
        if isinstance(row.get("image"), str):
            images.setdefault((row["model"], row["record_id"]), set()).add(row["image"])
    crowded = {key: names for key, names in images.items() if len(names) > 1}
    if crowded:
        (model, record_id), names = next(iter(crowded.items()))
        raise LeaderboardError(f"{path} ({form}) labels {len(names)} different images as record {record_id!r} of "
                               f"model {model!r} ({shown(sorted(names))}), and so for {len(crowded) - 1} more records; "
                               "a benchmark scores one image per prompt and model, so these labels cannot be "
                               "paired with it: measure this set with `vlmjudge agreement`")


def _estimates(judge: list[float], human: list[float], groups: list[str] | None, settings: dict) -> dict:
    """The agreement statistics with intervals on the matched items, or why there are none."""
    out: dict[str, Any] = {"n": len(judge)}
    few = too_few(len(judge))
    if few is not None:  # on 2 items every correlation is +1 or -1: absent, with the reason
        return {**out, "unavailable": few}
    try:
        result = agreement(judge, human, groups=groups, n_resamples=settings["n_resamples"],
                           confidence=settings["confidence"], seed=settings["seed"])
    except ValueError as error:  # fewer than 2 items, or a side without spread: said, not hidden
        return {**out, "unavailable": str(error)}
    return {**out, "statistics": {name: {key: (None if isinstance(v, float) and not math.isfinite(v) else v)
                                         for key, v in dataclasses.asdict(estimate).items()}
                                  for name, estimate in result.items()}}


def method_agreement(people: People, bench: BenchmarkRuns, method: Any, settings: dict) -> dict:
    """One method's agreement with people per model and over all models pooled (resampling whole
    prompts there, since one prompt's images across models are not independent evidence)."""
    protocol = dataclasses.replace(_protocol(method.name), sources=single_source, combine=only_value,
                                   details=no_details)
    pooled: dict[str, list] = {"judge": [], "human": [], "groups": []}
    by_model, left_out = {}, {"human_only": 0, "run_only": 0, "unscored": 0, "not_applicable": 0}
    for model in bench.models:
        run = method.runs[model]
        try:
            records = index_records(run.records, protocol, run.path)
        except ValueError as error:
            raise LeaderboardError(str(error)) from None
        rows = [{**row, "id": row["record_id"], "prompt_id": row["record_id"].partition("/")[0]}
                for row in people.rows if row["model"] == model]
        joined = join(records, rows, protocol)
        for key in left_out:
            left_out[key] += len(getattr(joined, key))
        by_model[model] = _estimates(joined.judge, joined.human, joined.groups, settings)
        pooled["judge"] += joined.judge
        pooled["human"] += joined.human
        pooled["groups"] += joined.groups or []
    return {"method": method.name, "judge_axis": protocol.judge_axis,
            "overall": _estimates(pooled["judge"], pooled["human"], pooled["groups"] or None, settings),
            "by_model": by_model, "left_out": left_out}


def human_agreement(people: People, bench: BenchmarkRuns, settings: dict) -> dict:
    """The `human` field of leaderboard.json: where the labels came from, and each method's agreement."""
    return {"path": people.path, "format": people.format, "labels_method": people.labels_method,
            "n_labels": len(people.rows) + len(people.unplaced), "n_unplaced": len(people.unplaced),
            "unplaced": people.unplaced[:50], "statistics": list(STATISTICS),
            "methods": [method_agreement(people, bench, method, settings) for method in bench.methods]}
