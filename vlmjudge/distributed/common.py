"""What every scale-out path shares: finding a method, splitting a batch into contiguous
shards, giving rows global ids, and scoring a slice to JSON records.

Records travel between processes as JSON dicts (`record.to_json()`), so any method's records
cross process and machine boundaries without pickling its classes.
"""
from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from ..registry import MethodSpec, get_method

ID_COLUMN = "id"


def resolve_method(method: str | MethodSpec) -> MethodSpec:
    """A MethodSpec from a spec, a registered name ("terravis"), or "module:ATTR" (a spec not
    installed as an entry point, importable in every worker)."""
    if isinstance(method, MethodSpec):
        return method
    if not isinstance(method, str) or not method:
        raise TypeError(f"method must be a MethodSpec, a registered name or 'module:ATTR', got {method!r}")
    if ":" not in method:
        return get_method(method)
    module_name, attr = method.split(":", 1)
    module = importlib.import_module(module_name)
    if not hasattr(module, attr):
        raise AttributeError(f"module {module_name!r} has no {attr!r} (from method {method!r})")
    spec = getattr(module, attr)
    if not isinstance(spec, MethodSpec):
        raise TypeError(f"{method!r} is a {type(spec).__name__}, not a vlmjudge MethodSpec")
    return spec


def shard_range(n: int, num_shards: int, index: int) -> tuple[int, int]:
    """Start and end of shard `index` of `n` rows: contiguous, the first `n % num_shards`
    shards one row longer (the split `accelerate`'s `split_between_processes` makes)."""
    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")
    if not 0 <= index < num_shards:
        raise ValueError(f"shard index {index} outside 0..{num_shards - 1}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    size, extra = divmod(n, num_shards)
    start = index * size + min(index, extra)
    return start, start + size + (1 if index < extra else 0)


def column_length(batch: Mapping[str, Sequence[Any]]) -> int:
    """The common length of a batch's columns; an error when they differ or there are none."""
    if not isinstance(batch, Mapping) or not batch:
        raise ValueError("a batch is a non-empty mapping of column name -> list of values")
    lengths = {name: len(values) for name, values in batch.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"batch columns differ in length: {lengths}")
    return next(iter(lengths.values()))


def slice_columns(batch: Mapping[str, Sequence[Any]], start: int, end: int) -> dict[str, list[Any]]:
    """Rows start..end of every column (a new dict: the caller's batch is never changed)."""
    return {name: list(values[start:end]) for name, values in batch.items()}


def shard_columns(batch: Mapping[str, Sequence[Any]], num_shards: int, index: int) -> dict[str, list[Any]]:
    """This shard's rows of a batch of columns (contiguous, see `shard_range`)."""
    start, end = shard_range(column_length(batch), num_shards, index)
    return slice_columns(batch, start, end)


def with_global_ids(spec: MethodSpec, batch: Mapping[str, Sequence[Any]], start: int = 0) -> dict[str, list[Any]]:
    """The batch with an "id" column of global row numbers when the method takes ids and the
    batch has none, so a shard's records carry the ids a single-process run gives them."""
    out = {name: list(values) for name, values in batch.items()}
    takes_ids = ID_COLUMN in (*spec.inputs, *spec.optional_inputs)
    if takes_ids and ID_COLUMN not in out:
        out[ID_COLUMN] = [str(start + i) for i in range(column_length(out))]
    return out


def build_scorer(spec: MethodSpec, judge: Any = None, *, model: Any = None, backend: str = "transformers",
                 judge_kwargs: Mapping[str, Any] | None = None, method_config: Mapping[str, Any] | None = None):
    """The method's scorer over `judge`, or over one loaded by `vlmjudge.faces.loading` from `model`,
    `backend` and `judge_kwargs` (which may name revision, device, dtype, cache and backend extras;
    `model` defaults to the method's default model)."""
    if judge is None:  # the one judge loader of every face (vlmjudge.faces), same no-model rule
        from ..faces.loading import load_method_judge

        judge = load_method_judge(spec.default_model, model=model, backend=backend,
                                  judge_kwargs=judge_kwargs, where=spec.name)
    elif model is not None or judge_kwargs:
        raise ValueError("give either a judge or model=/judge_kwargs=, not both")
    return spec.build(judge, **dict(method_config or {}))


def score_rows(spec: MethodSpec, scorer: Any, batch: Mapping[str, Sequence[Any]], *, start: int = 0,
               chunk_size: int | None = None) -> list[Any]:
    """Score rows (global row numbers from `start`) and return the method's records, in order;
    `chunk_size` bounds how many rows one `score_batch` call gets (None: all at once)."""
    n = column_length(batch)
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    step = chunk_size or max(n, 1)
    out: list[Any] = []
    for lo in range(0, n, step):
        chunk = with_global_ids(spec, slice_columns(batch, lo, min(lo + step, n)), start + lo)
        spec.check_batch(chunk)
        records = scorer.score_batch(chunk)
        if len(records) != column_length(chunk):
            raise RuntimeError(f"{spec.name}: score_batch returned {len(records)} records for "
                               f"{column_length(chunk)} rows")
        out.extend(records)
    return out


def score_to_json(spec: MethodSpec, scorer: Any, batch: Mapping[str, Sequence[Any]], *, start: int = 0,
                  chunk_size: int | None = None) -> list[dict[str, Any]]:
    """`score_rows`, with each record as its JSON dict (what crosses process boundaries)."""
    return [record.to_json() for record in score_rows(spec, scorer, batch, start=start, chunk_size=chunk_size)]


def score_records(method: str | MethodSpec, batch: Mapping[str, Sequence[Any]], *, judge: Any = None,
                  model: Any = None, backend: str = "transformers", judge_kwargs: Mapping[str, Any] | None = None,
                  method_config: Mapping[str, Any] | None = None,
                  chunk_size: int | None = None) -> list[dict[str, Any]]:
    """Single-process scoring of a batch to JSON records: the reference every scale-out path equals."""
    spec = resolve_method(method)
    if column_length(batch) == 0:
        raise ValueError(f"{spec.name}: empty batch")
    scorer = build_scorer(spec, judge, model=model, backend=backend, judge_kwargs=judge_kwargs,
                          method_config=method_config)
    return score_to_json(spec, scorer, batch, chunk_size=chunk_size)
