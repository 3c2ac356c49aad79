"""Compare whole runs of one method: every statistic the method declares, its breakdown by category,
and a refusal when the runs were not measured with the same instrument.

Runs scored by different method versions, prompt packs or judges measure different things, so a
difference between them says nothing about the models; `allow_mixed` overrides that refusal and
the result says so. Runs of different methods are refused even then: they have different
statistics. The method's statistics are given by the caller (`vlmjudge.compare` looks them up in
the registry): statistics know no method registry.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

from vlmjudge.run_records import RunRecords, in_score_range, iter_run_records, records_given, run_manifest
from vlmjudge.stats.board import Job, compare_statistics
from vlmjudge.stats.pairing import NA
from vlmjudge.stats.reliability import SMALL_N_NOTE, unscored_warnings
from vlmjudge.stats.settings import resampling_problem
from vlmjudge.stats.statistic import RecordRows, Statistic

#: The most resamples a comparison takes: time grows with them (2,000, the default, compares two
#: 100k-item runs in well under a minute; bench/compare.py), and the 2.5% and 97.5% percentiles
#: of a 95% interval are steady long before 100,000.
MAX_RESAMPLES = 100_000

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


class CompareInputError(ValueError):
    """Runs that cannot be compared as given (one run, a run given twice, labels that do not fit,
    runs of different methods, bad settings): one line."""


def _source(run: Any, position: int) -> RunRecords:
    """A run given as a path (only its manifest read now: its records stream later) or as records
    (checked now)."""
    if isinstance(run, (str, os.PathLike)):
        return RunRecords([], [], run_manifest(run), os.fspath(run))
    return records_given(run, f"run{position}")


def _rows(source: RunRecords, score_range: tuple[float, float] | None, method: str,
          statistics: Sequence[Statistic] | None) -> RecordRows:
    """One run's records as `RecordRows`: a file streamed and checked, each score in the method's range;
    read for `statistics` alone when given (the records are let go), else kept."""
    stream: Iterable[tuple[Mapping, str]] = iter_run_records(source.path) if source.path is not None \
        else zip(source.records, source.where)
    if score_range is not None:
        stream = in_score_range(stream, score_range, method)
    if statistics is not None:
        return RecordRows.read(stream, statistics)
    pairs = list(stream)
    return RecordRows([record for record, _ in pairs], [where for _, where in pairs])


def _applies(readers: Sequence[RecordRows], statistic: Statistic) -> bool:
    """Whether any run has an item the statistic can read (A/B statistics need A/B records)."""
    return any((reader.items(statistic).kinds != NA).any() for reader in readers)


def _jobs(readers: Sequence[RecordRows], statistics: Mapping[str, Statistic]) -> list[tuple[str, str | None, Job]]:
    """(group, category or statistic key, job) of the headline statistics and of the breakdown: per
    group (statistic groups and `split` categories), per statistic or category, without tests."""
    ungrouped = [(k, s) for k, s in statistics.items() if s.group is None]
    # The first statistic always heads the report, even where no item was scored (it then says n = 0).
    jobs = [("", k, (s, None, True)) for n, (k, s) in enumerate(ungrouped) if n == 0 or _applies(readers, s)]
    for name, stat in statistics.items():
        if stat.group is not None and _applies(readers, stat):
            jobs.append((stat.group, name, (stat, None, False)))
        if stat.group is None and stat.split is not None:
            found = sorted({c for reader in readers for cats in reader.categories(stat) for c in cats})
            jobs.extend((f"{stat.label} by category", category, (stat, category, False)) for category in found)
    return jobs


@dataclass
class RunSet:
    """Runs read for one comparison: each run's records as `RecordRows` (`rows`), its label, path
    (None for records given as a list) and manifest; `method` is the method they were scored with,
    `mixed_reasons` why they are not one instrument (empty unless `allow_mixed` let them through)."""

    rows: list[RecordRows]
    labels: list[str]
    paths: list[str | None]
    manifests: list[dict]
    method: str
    mixed_reasons: list[str]


def _labels(labels: Sequence[str] | None, loaded: list[RunRecords]) -> list[str]:
    """The given labels, checked (one distinct, non-empty label per run), or the runs' folder names
    (their paths where two folders share a name; `run0`, `run1` for records given in Python)."""
    if labels is None:
        folders = [os.path.basename(os.path.dirname(r.path) or r.path) if r.path else f"run{k}"
                   for k, r in enumerate(loaded)]
        return folders if len(set(folders)) == len(folders) else [r.path or f"run{k}" for k, r in enumerate(loaded)]
    labels = [str(label) for label in labels]
    if len(labels) != len(loaded) or len(set(labels)) != len(labels) or not all(label.strip() for label in labels):
        raise CompareInputError(f"give one distinct, non-empty label per run: {len(loaded)} runs, labels {labels}")
    return labels


def _method(method: str | None, given: list[Mapping], labels: list[str]) -> str:
    """The runs' one method: `method`, which the manifests must not contradict, else theirs."""
    named = [(label, m.get("method")) for label, m in zip(labels, given) if m.get("method")]
    methods = sorted({str(name) for _, name in named})
    if len(methods) > 1:
        shown = ", ".join(f"{label}: {name}" for label, name in named)
        raise CompareInputError(f"runs of different methods ({shown}) have different statistics and cannot be "
                                "compared; --allow-mixed admits runs of one method scored with different versions, "
                                "prompt packs or judges")
    if method is not None and methods and methods[0] != method:
        raise CompareInputError(f"method {method!r} was given, but the runs' manifests say {methods[0]!r}")
    name = method or (methods[0] if methods else None)
    if name is None:
        raise CompareInputError("cannot tell the runs' method: give method= (--method), or runs with manifests")
    return name


def read_runs(runs: Sequence[Any], *, labels: Sequence[str] | None = None, method: str | None = None,
              manifests: Sequence[Mapping] | None = None, allow_mixed: bool = False,
              score_range: Callable[[str], tuple[float, float]] | None = None,
              statistics: Callable[[str], Mapping[str, Statistic]] | None = None) -> RunSet:
    """Runs (record lists or run file paths) with their labels and method, checked to be one instrument.

    Every record is checked (`vlmjudge.run_records`: the record schema, no NaN or Infinity, each id
    once, no empty run; `RunFileError` names file and line), and with `score_range(method)` every
    score against the method's range. The method comes from `method`, else from the manifests
    (beside run files, or given), which are read before any record. With `statistics(method)`,
    records are read for those statistics alone and let go (a large run is never held whole);
    without, they are kept for any statistic. Raises MixedRunsError (one line) when the manifests
    disagree on version, pack or judge, unless `allow_mixed`; CompareInputError for fewer than two
    runs, one file given twice, labels that do not fit, runs of different methods (even with
    `allow_mixed`) or no method.
    """
    if isinstance(runs, (str, os.PathLike)) or len(runs) < 2:
        raise CompareInputError("compare needs at least two runs")
    files = [os.path.realpath(run) for run in runs if isinstance(run, (str, os.PathLike))]
    twice = sorted({os.fspath(run) for run in runs if isinstance(run, (str, os.PathLike))
                    and files.count(os.path.realpath(run)) > 1})
    if twice:
        raise CompareInputError(f"the same run is given twice ({', '.join(twice)}): compare different runs")
    sources = [_source(run, k) for k, run in enumerate(runs)]
    labels = _labels(labels, sources)
    given = list(manifests) if manifests is not None else [source.manifest for source in sources]
    if len(given) != len(sources) or not all(isinstance(m, Mapping) for m in given):
        raise CompareInputError(f"give one manifest (a mapping) per run: {len(sources)} runs, {len(given)} manifests")
    name = _method(method, given, labels)
    reasons = mixed_reasons(given, labels) if any(given) else []
    if reasons and not allow_mixed:
        raise MixedRunsError("refusing to compare: " + "; ".join(reasons) + " (--allow-mixed overrides)")
    limits = None if score_range is None else score_range(name)
    wanted = None if statistics is None else list(statistics(name).values())
    return RunSet([_rows(source, limits, name, wanted) for source in sources], labels,
                  [source.path for source in sources], [source.manifest for source in sources], name, reasons)


def _checked_options(n_resamples: Any, seed: Any, confidence: Any) -> None:
    """Settings a comparison can run with, or a CompareInputError naming the one that is not."""
    problem = resampling_problem(n_resamples, seed, confidence, most=MAX_RESAMPLES)
    if problem is not None:
        raise CompareInputError(problem)


def _finite_values(results: Mapping[str, dict]) -> None:
    """Refuse a statistic that came out infinite from finite records (numbers too large to add up)."""
    for result in results.values():
        for row in result["leaderboard"]:
            if math.isinf(row["value"]):
                raise CompareInputError(f"the {result.get('label', 'statistic')} of {row['label']} came out infinite "
                                        "(numbers too large to add up); refusing to rank on it")


def compare_runs(runs: RunSet, statistics: Mapping[str, Statistic], *, n_resamples: int = 2000, seed: int = 0,
                 confidence: float = 0.95) -> dict:
    """Compare read runs under their method's statistics (`MethodSpec.statistics`).

    Returns the headline statistic's "leaderboard", "pairwise" (diff = b - a, interval, swap-test
    p, Holm's p) and "unpaired", the "warnings" a reader must see beside them (runs scored on
    different numbers of items, too few items: `vlmjudge.stats.reliability`), every applicable
    statistic under "statistics", the "breakdown" by category, and "mixed" with its reasons. Every statistic and category is computed in one
    `compare_statistics` call, so pooled ones share their resamples (`vlmjudge.stats.blocks`);
    `n_resamples` is at most `MAX_RESAMPLES`.
    """
    if not statistics:
        raise CompareInputError(f"method {runs.method!r} declares no statistics to compare")
    _checked_options(n_resamples, seed, confidence)
    readers, labels = runs.rows, runs.labels
    options = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    jobs = _jobs(readers, statistics)
    computed = compare_statistics(readers, labels, [job for _, _, job in jobs], **options)
    results, breakdown = {}, {}
    for (group, key, (stat, _, _)), result in zip(jobs, computed):
        if group == "":
            results[key] = {"label": stat.label, "description": stat.description,
                            "higher_is_better": stat.higher_is_better, **result}
        else:
            breakdown.setdefault(group, {})[key] = result
    _finite_values(results)
    first = next(iter(results))
    head = results[first]
    warnings = unscored_warnings(head["leaderboard"], head["label"])
    if any(entry.get("unreliable") for entry in head["leaderboard"] + head["pairwise"]):
        warnings.append(SMALL_N_NOTE)
    return {"method": runs.method, "statistic": first, "labels": labels, "mixed": bool(runs.mixed_reasons),
            "mixed_reasons": runs.mixed_reasons,
            "runs": [{"label": label, "path": path, "n_records": len(reader), "manifest": manifest}
                     for label, reader, path, manifest in zip(labels, readers, runs.paths, runs.manifests)],
            "leaderboard": results[first]["leaderboard"], "pairwise": results[first]["pairwise"],
            "unpaired": results[first]["unpaired"], "warnings": warnings, "statistics": results,
            "breakdown": breakdown, **options}
