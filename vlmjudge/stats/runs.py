"""Compare whole runs of one method: every statistic the method declares, its breakdown by category,
and a refusal when the runs were not measured with the same instrument.

Runs scored by different methods, method versions, prompt packs or judges measure different
things, so a difference between them says nothing about the models; `allow_mixed` overrides the
refusal and the result says so. The method's statistics are given by the caller
(`vlmjudge.compare` looks them up in the registry): statistics know no method registry.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vlmjudge.stats.board import compare_statistic
from vlmjudge.stats.statistic import Statistic, categories_of, item_rows

#: Manifest keys that must agree, with the name a refusal gives them.
SAME_INSTRUMENT = (("method", "method"), ("method_version", "method version"),
                   ("pack", "prompt pack"), ("pack_version", "prompt pack"), ("pack_sha256", "prompt pack"))


class MixedRunsError(ValueError):
    """Runs that were not scored with one method, version, prompt pack and judge."""


def _judge(manifest: Mapping) -> Any:
    """The judge a manifest names: its weights' digest when recorded, else the model and revision."""
    return manifest.get("checkpoint") or (manifest.get("model"), manifest.get("revision"))


def mixed_reasons(manifests: Sequence[Mapping], labels: Sequence[str]) -> list[str]:
    """One line per way the runs' manifests disagree (absent and None count as the same)."""
    reasons, named = [], set()
    for key, name in SAME_INSTRUMENT:
        values = [m.get(key) for m in manifests]
        if name not in named and len({repr(v) for v in values}) > 1:
            named.add(name)
            shown = ", ".join(f"{label}: {v}" for label, v in zip(labels, values))
            reasons.append(f"different {name} ({shown})")
    both_digests = all(m.get("checkpoint") for m in manifests)
    judges = [_judge(m) if both_digests else (m.get("model"), m.get("revision")) for m in manifests]
    if len({repr(j) for j in judges}) > 1:
        shown = ", ".join(f"{label}: {m.get('model')}" for label, m in zip(labels, manifests))
        reasons.append(f"different judge, a different instrument ({shown})")
    return reasons


def _load(run: Any) -> tuple[list, dict, str | None]:
    """Records, manifest and path of a run given as a path or as records."""
    if isinstance(run, (str, os.PathLike)):
        from vlmjudge.outputs import read_run
        records, manifest = read_run(run)
        return records, manifest or {}, str(run)
    return list(run), {}, None


def _applies(records: Sequence[Sequence[Mapping]], statistic: Statistic) -> bool:
    """Whether any run has an item the statistic can read (A/B statistics need A/B records)."""
    return any(row["row"] is not None for recs in records for row in item_rows(recs, statistic))


def _breakdown(records: list, labels: list, statistics: Mapping[str, Statistic], options: dict) -> dict:
    """Per group (statistic groups and `split` categories): per statistic or category, each run's
    value with its interval and each pair's difference (no tests: these are for reading)."""
    out: dict[str, dict] = {}
    for name, stat in statistics.items():
        if stat.group is not None and _applies(records, stat):
            out.setdefault(stat.group, {})[name] = compare_statistic(records, labels, stat, tests=False, **options)
        if stat.group is None and stat.split is not None:
            found = sorted({c for recs in records for rec in recs for c in categories_of(stat, rec)})
            for category in found:
                result = compare_statistic(records, labels, stat, only=category, tests=False, **options)
                out.setdefault(f"{stat.label} by category", {})[category] = result
    return out


@dataclass
class RunSet:
    """Runs read for one comparison, each with its label, path (None for records given as a
    list) and manifest; `method` is the method they were scored with, `mixed_reasons` why they
    are not one instrument (empty unless `allow_mixed` let them through)."""

    records: list[list]
    labels: list[str]
    paths: list[str | None]
    manifests: list[dict]
    method: str
    mixed_reasons: list[str]


def read_runs(runs: Sequence[Any], *, labels: Sequence[str] | None = None, method: str | None = None,
              manifests: Sequence[Mapping] | None = None, allow_mixed: bool = False) -> RunSet:
    """Runs (record lists or run file paths) with their labels and method, checked to be one instrument.

    The method comes from `method`, else from the manifests (beside run files, or given). Raises
    MixedRunsError (one line) when the manifests disagree on method, version, pack or judge,
    unless `allow_mixed`; ValueError for fewer than two runs, repeated labels or no method.
    """
    loaded = [_load(run) for run in runs]
    if len(loaded) < 2:
        raise ValueError("compare needs at least two runs")
    given = list(manifests) if manifests is not None else [m for _, m, _ in loaded]
    default_labels = [os.path.basename(os.path.dirname(p) or p) if p else f"run{k}" for k, (_, _, p) in enumerate(loaded)]
    if labels is None:
        labels = default_labels if len(set(default_labels)) == len(default_labels) else \
            [p or f"run{k}" for k, (_, _, p) in enumerate(loaded)]
    labels = list(labels)
    if len(set(labels)) != len(labels) or len(labels) != len(loaded):
        raise ValueError(f"give one distinct label per run, got {labels}")
    reasons = mixed_reasons(given, labels) if any(given) else []
    if reasons and not allow_mixed:
        raise MixedRunsError("refusing to compare: " + "; ".join(reasons) + " (--allow-mixed overrides)")
    methods = {m.get("method") for m in given if m.get("method")}
    name = method or (methods.pop() if len(methods) == 1 else None)
    if name is None:
        raise ValueError("cannot tell the runs' method: give method= (or runs with manifests)")
    return RunSet([recs for recs, _, _ in loaded], labels, [p for _, _, p in loaded], [m for _, m, _ in loaded],
                  name, reasons)


def compare_runs(runs: RunSet, statistics: Mapping[str, Statistic], *, n_resamples: int = 2000, seed: int = 0,
                 confidence: float = 0.95) -> dict:
    """Compare read runs under their method's statistics (`MethodSpec.statistics`).

    Returns the headline statistic's "leaderboard", "pairwise" (diff = b - a, interval, swap-test
    p, Holm's p) and "unpaired", every applicable statistic under "statistics", the "breakdown"
    by category, and "mixed" with its reasons.
    """
    if not statistics:
        raise ValueError(f"method {runs.method!r} declares no statistics to compare")
    records, labels = runs.records, runs.labels
    options = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    ungrouped = {k: s for k, s in statistics.items() if s.group is None}
    # The first statistic always heads the report, even where no item was scored (it then says n = 0).
    headline = {k: s for n, (k, s) in enumerate(ungrouped.items()) if n == 0 or _applies(records, s)}
    results = {k: {"label": s.label, "description": s.description, "higher_is_better": s.higher_is_better,
                   **compare_statistic(records, labels, s, **options)} for k, s in headline.items()}
    first = next(iter(results))
    return {"method": runs.method, "statistic": first, "labels": labels, "mixed": bool(runs.mixed_reasons),
            "mixed_reasons": runs.mixed_reasons,
            "runs": [{"label": label, "path": path, "n_records": len(recs), "manifest": manifest}
                     for label, recs, path, manifest in zip(labels, records, runs.paths, runs.manifests)],
            "leaderboard": results[first]["leaderboard"], "pairwise": results[first]["pairwise"],
            "unpaired": results[first]["unpaired"], "statistics": results,
            "breakdown": _breakdown(records, labels, statistics, options), **options}
