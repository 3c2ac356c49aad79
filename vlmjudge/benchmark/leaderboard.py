"""The leaderboard of a benchmark: every model under every method's own headline statistic, with
bootstrap intervals and rank ranges, the mean rank over the methods, the agreement between the
methods' rankings, the same rows per suite category, and, given people's labels, each method's
agreement with people (`leaderboard.json`; docs/leaderboard.md explains every field).

One set of resampled prompts serves every model and every method (the same seed draws the same
prompt indices in `vlmjudge.stats.board`), all images of a drawn prompt go together, and only the
prompts every run holds are used, so no model is ranked on evidence another lacks.
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from vlmjudge.stats.board import NO_STATUS, ROW, leaderboard
from vlmjudge.stats.pairing import read_items
from vlmjudge.stats.rankings import mean_ranks, ranking_agreement
from vlmjudge.stats.reliability import unscored_warnings
from vlmjudge.stats.settings import resampling_problem
from vlmjudge.stats.swap import EXACT_BELOW
from vlmjudge.stats.statistic import value_of

from .leaderboard_runs import BenchmarkRuns, LeaderboardError, MethodRuns, read_runs

__all__ = ["LEADERBOARD_NAME", "LeaderboardError", "build_leaderboard", "write_leaderboard"]

#: The leaderboard's file name in a benchmark's --out folder.
LEADERBOARD_NAME = "leaderboard.json"
#: The most resamples a leaderboard takes (each is one statistic per model, method and category).
MAX_RESAMPLES = 1_000_000


@dataclass(frozen=True)
class PooledImages:
    """A method's compute over prompts that each hold several images: a prompt's row is its image
    slots side by side, each slot a flag (1: scored) and the image's row; the scored images of the
    drawn prompts go to the method's own compute, so drawing a prompt draws all its images."""

    compute: Callable[..., Any]
    width: int

    def __call__(self, x: np.ndarray) -> float:
        slots = np.asarray(x, dtype=float).reshape(-1, 1 + self.width)
        scored = slots[slots[:, 0] == 1, 1:]
        return float(self.compute(scored)) if len(scored) else math.nan


def _scored(row: Any) -> bool:
    """Whether an image's row holds a number (None: not applicable; NaN: failed)."""
    return row is not None and not np.isnan(np.asarray(row, dtype=float)).any()


def statistic_rows(method: MethodRuns, models: list[str], prompts: list[str]) -> tuple[list[np.ndarray], Any, list]:
    """Each model's rows on `prompts` (the same prompt order for every model and method), the
    statistic to compute on them, and each model's items (for the counts). One image per prompt:
    an image's row per prompt (NaN where unscored); several: `PooledImages` rows."""
    images = [[method.runs[model].by_prompt[p] for p in prompts] for model in models]
    widths = {len(row) for per_model in images for per_prompt in per_model for _, row in per_prompt if _scored(row)}
    if len(widths) > 1:
        raise LeaderboardError(f"the {method.name} statistic {method.statistic.label!r} reads rows of different "
                               f"lengths {sorted(widths)} from its records")
    width = widths.pop() if widths else 1
    items = [read_items([{"id": rid, ROW: row} for per_prompt in per_model for rid, row in per_prompt],
                        value=ROW, status_key=NO_STATUS) for per_model in images]
    slots = max(len(per_prompt) for per_model in images for per_prompt in per_model)
    if slots == 1:
        rows = [np.array([per_prompt[0][1] if _scored(per_prompt[0][1]) else [math.nan] * width
                          for per_prompt in per_model], dtype=float) for per_model in images]
        return rows, method.statistic, items
    rows = []
    for per_model in images:
        table = np.zeros((len(prompts), slots, 1 + width))
        for i, per_prompt in enumerate(per_model):
            for k, (_, row) in enumerate(per_prompt):
                if _scored(row):
                    table[i, k] = [1.0, *row]
        rows.append(table.reshape(len(prompts), -1))
    return rows, replace(method.statistic, compute=PooledImages(method.statistic.compute, width)), items


def _number(value: Any, where: str = "") -> float | None:
    """A finite float, None for NaN (nothing to compute on); an infinite result is refused."""
    value = float(value)
    if math.isinf(value):
        raise LeaderboardError(f"{where or 'a value'} came out infinite (numbers too large to add up); "
                               "refusing to rank on it")
    return None if math.isnan(value) else value


def method_rows(method: MethodRuns, models: list[str], prompts: list[str], settings: dict) -> list[dict]:
    """The leaderboard rows of one method on `prompts`, best first: value, interval, counts, and the
    rank with its bootstrap range (no rank for a model with nothing scored)."""
    rows, statistic, items = statistic_rows(method, models, prompts)
    with warnings.catch_warnings():  # numpy's note on a model with nothing scored, whose row then says so
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)
        board = leaderboard(models, items, rows, statistic, settings["n_resamples"], settings["seed"],
                            settings["confidence"])
    out = []
    for entry in board:
        where = f"the {method.name} {method.statistic.label} of {entry['label']!r}"
        value = _number(entry["value"], where)
        ranked = value is not None and "rank" in entry
        out.append({"model": entry["label"], "method": method.name, "statistic": method.statistic_key,
                    "value": value, "low": _number(entry["low"], where), "high": _number(entry["high"], where),
                    "n": entry["n"], "n_not_applicable": entry["n_na"], "n_failed": entry["n_failed"],
                    "n_unscored": entry["n_unscored"], "n_items": entry["n_items"], "unreliable": entry["unreliable"],
                    "rank": entry["rank"] if ranked else None, "rank_low": entry["rank_low"] if ranked else None,
                    "rank_high": entry["rank_high"] if ranked else None})
    return out


def _whole_run(row: dict, method: MethodRuns, paired: list[str]) -> dict:
    """The row with the statistic over every record of its run, and how many records pairing left out."""
    run = method.runs[row["model"]]
    kept = sum(len(run.by_prompt[p]) for p in paired)
    return {**row, "value_all": _number(value_of(run.records, method.statistic)), "n_records": len(run.records),
            "n_unpaired_records": len(run.records) - kept}


def board_warnings(rows: list[dict], bench: BenchmarkRuns) -> list[str]:
    """Per method, a line for each model whose value rests on more unscored items (N/A, failed) of
    the paired prompts than another's, and one when some value rests on under 10 items."""
    out = []
    for method in bench.methods:
        mine = [{**row, "label": row["model"]} for row in rows if row["method"] == method.name]
        out.extend(f"{method.name}: {line}" for line in unscored_warnings(mine, method.statistic.label))
    if any(row["unreliable"] for row in rows):
        out.append(f"some value rests on under {EXACT_BELOW} items: its interval and rank range are unreliable")
    return out


def mean_rank_entries(rows: list[dict], models: list[str], methods: list[str]) -> list[dict]:
    """Per model its mean rank over the methods that ranked it, how many did, and each rank; best first."""
    table = [[next((r["rank"] for r in rows if r["model"] == model and r["method"] == method), None)
              for model in models] for method in methods]
    means, counts = mean_ranks(np.array([[np.nan if r is None else r for r in line] for line in table], dtype=float))
    entries = [{"model": model, "mean_rank": _number(means[m]), "n_methods": int(counts[m]),
                "ranks": {method: table[k][m] for k, method in enumerate(methods)}} for m, model in enumerate(models)]
    return sorted(entries, key=lambda e: (e["mean_rank"] is None, e["mean_rank"] or 0.0))


def agreement_entries(rows: list[dict], bench: BenchmarkRuns) -> dict:
    """Kendall's tau between every pair of methods' rankings of the models, and the mean over the pairs."""
    ranked = [m for m in bench.methods if m.statistic.higher_is_better is not None]
    values = {m.name: {r["model"]: (math.nan if r["value"] is None else r["value"])
                       for r in rows if r["method"] == m.name} for m in ranked}
    result = ranking_agreement(values, {m.name: m.statistic.higher_is_better for m in ranked})
    pairs = [{"a": a, "b": b, "tau": _number(tau), "n_models": result["n_models"][a, b],
              **({"reason": result["reasons"][a, b]} if (a, b) in result["reasons"] else {})}
             for (a, b), tau in result["pairs"].items()]
    return {"pairs": pairs, "mean": _number(result["mean"]), "n_pairs": len(pairs),
            "n_pairs_defined": sum(p["tau"] is not None for p in pairs),
            "unranked_methods": [m.name for m in bench.methods if m not in ranked]}


def category_entries(bench: BenchmarkRuns, suite: Any, settings: dict) -> list[dict]:
    """The rows within each category of the suite (per tag kind and tag), on the paired prompts
    holding that tag; a category with none of them has no rows."""
    tags_of = {p.id: p.categories for p in suite.prompts}
    out = []
    for kind in suite.kinds():
        for tag in suite.tags(kind):
            prompts = [p for p in bench.paired if tag in tags_of[p].get(kind, ())]
            rows = [row for method in bench.methods for row in method_rows(method, bench.models, prompts, settings)] \
                if prompts else []
            out.append({"kind": kind, "tag": tag, "n_prompts": len(prompts), "rows": rows})
    return out


def _settings(n_resamples: Any, seed: Any, confidence: Any) -> dict:
    """The resampling settings, checked: whole numbers in range, a confidence strictly inside (0, 1)."""
    problem = resampling_problem(n_resamples, seed, confidence, most=MAX_RESAMPLES)
    if problem is not None:
        raise LeaderboardError(problem)
    return {"n_resamples": n_resamples, "seed": seed, "confidence": float(confidence),
            "resampling": "prompts, drawn jointly for every model and method; all images of a prompt together"}


def build_leaderboard(runs: Any, suite: Any, *, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95,
                      human: tuple[str | os.PathLike, str] | None = None) -> dict:
    """The leaderboard of `runs` ({model: {method: records.jsonl}}, each with its manifest beside it)
    on `suite` (a `PromptSuite`): the fields of `leaderboard.json`. `human` is None or (path,
    format) of people's labels (`--human FILE --human-format F`). Any run, suite or setting it
    cannot use is a `LeaderboardError` with a one-line message, raised before anything is computed."""
    settings = _settings(n_resamples, seed, confidence)
    bench = read_runs(runs, suite)
    people = None
    if human is not None:
        from .leaderboard_human import read_human
        people = read_human(human, bench)
    rows = [_whole_run(row, method, bench.paired) for method in bench.methods
            for row in method_rows(method, bench.models, bench.paired, settings)]
    methods = [m.name for m in bench.methods]
    board = {
        "suite": {"name": str(suite.name), "subset": getattr(suite, "subset", None), "n_prompts": len(suite.ids())},
        "models": bench.models,
        "methods": [{"method": m.name, "statistic": m.statistic_key, "label": m.statistic.label,
                     "description": m.statistic.description, "higher_is_better": m.statistic.higher_is_better}
                    for m in bench.methods],
        "settings": settings, "n_paired_prompts": len(bench.paired), "prompts_missing": bench.missing,
        "runs": {model: {m.name: m.runs[model].path for m in bench.methods} for model in bench.models},
        "rows": rows, "warnings": board_warnings(rows, bench),
        "mean_rank": mean_rank_entries(rows, bench.models, methods),
        "ranking_agreement": agreement_entries(rows, bench),
        "by_category": category_entries(bench, suite, settings), "human": None,
    }
    if people is not None:
        from .leaderboard_human import human_agreement
        board["human"] = human_agreement(people, bench, settings)
    return board


def write_leaderboard(board: dict, out_dir: str | os.PathLike) -> Path:
    """Write `board` as `out_dir/leaderboard.json`, whole or not at all (an earlier file stays as it
    was when writing fails); returns its path. A NaN or infinity in it is a ValueError naming the field."""
    from vlmjudge.outputs import json_text, write_text_whole

    if not isinstance(board, dict) or "rows" not in board:
        raise LeaderboardError(f"write_leaderboard takes the dict build_leaderboard returns, got {type(board).__name__}")
    path = Path(out_dir) / LEADERBOARD_NAME
    return write_text_whole(path, json_text(board, str(path), indent=2) + "\n")
