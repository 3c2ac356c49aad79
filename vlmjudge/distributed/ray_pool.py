"""Ray Data scoring: a fixed pool of actors, each holding one judge (one model copy, or one
client of a served model), maps batches of a dataset to records.

Images travel in the dataset's columns as encoded bytes, arrays or paths every node can read;
each output row carries the record as JSON plus its score and validity.
"""
from __future__ import annotations

import io
import json
import math
import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from .accelerate_shards import DistributedScores, scorer_stats
from .common import (
    build_scorer,
    column_length,
    resolve_method,
    score_rows,
    with_global_ids,
)
from ..registry import MethodSpec

ROW_COLUMN = "__row"
RECORD_COLUMN = "record"
#: Columns every output row gets besides the record: score (NaN when None), validity, the actor
#: that scored it, and the model calls that actor made for its batch.
OUTPUT_COLUMNS = (RECORD_COLUMN, "score", "valid", "worker", "judge_calls")


class ScorerActor:
    """A Ray Data callable class: one judge per actor, loaded once, scoring every batch it is sent."""

    def __init__(self, method: str | MethodSpec, model: Any = None, backend: str = "transformers",
                 judge_kwargs: Mapping[str, Any] | None = None, method_config: Mapping[str, Any] | None = None,
                 chunk_size: int | None = None) -> None:
        self.spec = resolve_method(method)
        self.scorer = build_scorer(self.spec, model=model, backend=backend, judge_kwargs=judge_kwargs,
                                   method_config=method_config)
        self.chunk_size = chunk_size
        self.worker = f"{socket.gethostname()}:{os.getpid()}"

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """Records for a batch of numpy columns; the method's required input columns are dropped
        (images do not travel back), every other column is kept."""
        import numpy as np

        columns = {name: _values(values) for name, values in batch.items()}
        used = (*self.spec.inputs, *self.spec.optional_inputs)
        calls_before = scorer_stats(self.scorer).get("model_calls", 0)
        records = score_rows(self.spec, self.scorer, {k: v for k, v in columns.items() if k in used},
                             chunk_size=self.chunk_size)
        out = {name: values for name, values in batch.items() if name not in self.spec.inputs}
        out[RECORD_COLUMN] = np.array([json.dumps(r.to_json(), ensure_ascii=False) for r in records], dtype=object)
        out["score"] = np.array([math.nan if r.score is None else float(r.score) for r in records], dtype=np.float64)
        out["valid"] = np.array([bool(r.valid) for r in records], dtype=bool)
        out["worker"] = np.array([self.worker] * len(records), dtype=object)
        calls = scorer_stats(self.scorer).get("model_calls", 0) - calls_before
        # The batch's calls on its first row, so the column sums to the total.
        out["judge_calls"] = np.array(([calls] + [0] * (len(records) - 1)) if records else [], dtype=np.int64)
        return out


def _values(column: Any) -> list[Any]:
    """A numpy batch column as a list of per-row values (bytes, str, arrays, ...)."""
    if hasattr(column, "ndim") and column.ndim == 1:
        return column.tolist()
    return list(column)


def score_dataset_ray(dataset: Any, method: str | MethodSpec, *, model: Any = None, backend: str = "transformers",
                      judge_kwargs: Mapping[str, Any] | None = None, method_config: Mapping[str, Any] | None = None,
                      num_actors: int = 1, num_gpus: float = 0, num_cpus: float = 1, batch_size: int = 16,
                      chunk_size: int | None = None, **map_kwargs: Any):
    """`dataset.map_batches(ScorerActor, compute=ActorPoolStrategy(size=num_actors), ...)`: a lazy
    dataset of records. `num_gpus` / `num_cpus` are reserved per actor (an actor given a GPU loads
    a transformers judge on "cuda" unless `device` is set). Give the dataset an "id" column when
    the method takes ids, so they are unique across batches. Other keywords go to `map_batches`.
    """
    import ray.data

    if num_actors < 1:
        raise ValueError(f"num_actors must be >= 1, got {num_actors}")
    spec = resolve_method(method)
    kwargs = dict(judge_kwargs or {})
    if num_gpus and backend == "transformers":
        kwargs.setdefault("device", "cuda")
    resources: dict[str, Any] = {"num_cpus": num_cpus}
    if num_gpus:
        resources["num_gpus"] = num_gpus
    return dataset.map_batches(
        ScorerActor,
        fn_constructor_kwargs={"method": method if isinstance(method, str) else spec, "model": model,
                               "backend": backend, "judge_kwargs": kwargs, "method_config": dict(method_config or {}),
                               "chunk_size": chunk_size},
        compute=ray.data.ActorPoolStrategy(size=num_actors), batch_size=batch_size, batch_format="numpy",
        **resources, **map_kwargs)


def score_columns_ray(method: str | MethodSpec, batch: Mapping[str, Sequence[Any]], *, batch_size: int = 8,
                      num_actors: int = 1, **kwargs: Any) -> DistributedScores:
    """Score in-memory columns on the running Ray cluster: records in input order, and per actor
    the rows it scored and its model calls (PIL images are sent as PNG bytes; rows get global
    ids when the method takes ids). Keywords as `score_dataset_ray`."""
    import ray.data

    spec = resolve_method(method)
    n = column_length(batch)
    if n == 0:
        raise ValueError(f"{spec.name}: empty batch")
    columns = with_global_ids(spec, batch)
    rows = [{**{name: _portable(values[i]) for name, values in columns.items()}, ROW_COLUMN: i} for i in range(n)]
    blocks = min(n, max(num_actors, math.ceil(n / batch_size)))
    dataset = ray.data.from_items(rows, override_num_blocks=blocks)
    scored = score_dataset_ray(dataset, method, num_actors=num_actors, batch_size=batch_size, **kwargs)
    out = sorted(scored.select_columns([ROW_COLUMN, *OUTPUT_COLUMNS]).take_all(), key=lambda row: row[ROW_COLUMN])
    if [row[ROW_COLUMN] for row in out] != list(range(n)):
        raise RuntimeError(f"ray returned rows {[row[ROW_COLUMN] for row in out][:10]}... for {n} inputs")
    workers: dict[str, dict[str, int]] = {}
    for row in out:
        entry = workers.setdefault(row["worker"], {"rows": 0, "model_calls": 0})
        entry["rows"] += 1
        entry["model_calls"] += int(row["judge_calls"])
    made_by = {"method": spec.name, "model": kwargs.get("model") or spec.default_model,
               "backend": kwargs.get("backend", "transformers"), "config": dict(kwargs.get("method_config") or {}),
               "command": "vlmjudge.distributed.score_columns_ray", "actors": num_actors}
    return DistributedScores([json.loads(row[RECORD_COLUMN]) for row in out], [],
                             [{"worker": name, **entry} for name, entry in sorted(workers.items())], made_by)


def _portable(value: Any) -> Any:
    """A value Arrow can hold: PIL images become PNG bytes (lossless), the rest is unchanged."""
    if hasattr(value, "save") and hasattr(value, "mode"):
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return buffer.getvalue()
    return value
