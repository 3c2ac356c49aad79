"""Data-parallel scoring with accelerate: every process loads its own judge, scores its
contiguous shard, and the JSON records are gathered back into input order.

Run the same script under `accelerate launch` or `torchrun` (or a single plain process:
then it is one shard and no process group is needed).
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import (
    build_scorer,
    column_length,
    resolve_method,
    score_to_json,
    slice_columns,
)
from ..registry import MethodSpec


@dataclass
class DistributedScores:
    """Gathered records in input order, and what each process (or Ray actor) did: its row range
    (`shards`, accelerate) and its judge stats (`stats`; for Ray, per actor: worker, rows, model_calls)."""

    records: list[dict[str, Any]]
    shards: list[tuple[int, int]] = field(default_factory=list)
    stats: list[dict[str, Any]] = field(default_factory=list)
    #: What judged (the method's manifest, else its judge's), from the first process that scored.
    manifest: dict[str, Any] = field(default_factory=dict)

    def save(self, out: str | os.PathLike, **manifest: Any) -> Path:
        """Write the records to `out` and the manifest beside them (`vlmjudge.outputs`: the layout of
        every scoring command), `manifest` keywords added to what judged; returns the manifest's path."""
        from ..outputs import write_manifest, write_records

        write_records(out, self.records)
        return write_manifest(out, {**self.manifest, **manifest, "n_scored": len(self.records)})

    @property
    def model_calls(self) -> list[int]:
        """Requests that reached the model, per process (cache hits excluded)."""
        return [s.get("model_calls", 0) for s in self.stats]


def score_dataset_accelerate(method: str | MethodSpec, batch: Mapping[str, Sequence[Any]], *, model: Any = None,
                             backend: str = "transformers", judge_kwargs: Mapping[str, Any] | None = None,
                             method_config: Mapping[str, Any] | None = None, chunk_size: int | None = None,
                             state: Any = None) -> DistributedScores:
    """Score `batch` (columns) across the processes of an accelerate/torchrun launch.

    Each process takes the contiguous shard `PartialState.split_between_processes` gives it,
    loads a judge (`load_judge(model, backend, **judge_kwargs)`; the transformers backend goes
    to the process's device unless `device` is given), scores, and all processes receive the
    records of every shard, in input order, with per-process judge stats.
    """
    from accelerate.utils import gather_object

    spec = resolve_method(method)
    n = column_length(batch)
    if n == 0:
        raise ValueError(f"{spec.name}: empty batch")
    state = state if state is not None else default_state()
    kwargs = dict(judge_kwargs or {})
    if backend == "transformers" and "device" not in kwargs:
        kwargs["device"] = str(state.device)
    with state.split_between_processes(list(range(n))) as mine:
        rows = list(mine)  # contiguous: shard_range(n, num_processes, process_index)
    start, end = (rows[0], rows[-1] + 1) if rows else (n, n)
    records: list[dict[str, Any]] = []
    stats: dict[str, int] = {}
    manifest: dict[str, Any] = {}
    if end > start:
        scorer = build_scorer(spec, model=model, backend=backend, judge_kwargs=kwargs, method_config=method_config)
        records = score_to_json(spec, scorer, slice_columns(batch, start, end), start=start, chunk_size=chunk_size)
        stats = scorer_stats(scorer)
        manifest = scorer_manifest(scorer)
    parts = gather_object([(start, end, records, stats, manifest)])
    parts = sorted(parts, key=lambda part: part[0])
    gathered = [record for part in parts for record in part[2]]
    if len(gathered) != n:
        raise RuntimeError(f"gathered {len(gathered)} records for {n} rows")
    return DistributedScores(gathered, [(p[0], p[1]) for p in parts], [p[3] for p in parts],
                             next((p[4] for p in parts if p[4]), {}))


def default_state():
    """accelerate's PartialState for this launch; on a machine without CUDA, the CPU (gloo) group
    that `torchrun --nproc-per-node N` sets up (accelerate only forms one when told `cpu=True`)."""
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def scorer_stats(scorer: Any) -> dict[str, int]:
    """The judge stats of a scorer that exposes its judge (every built-in method does)."""
    judge = getattr(scorer, "judge", None)
    stats = getattr(judge, "stats", None)
    return stats.as_dict() if stats is not None else {}


def scorer_manifest(scorer: Any) -> dict[str, Any]:
    """What a scorer judges with, as JSON: the method's own `manifest()` (TerraVis, VIEScore2), else
    its judge's (model, backend, revision, ...), else {}."""
    import json

    for owner in (scorer, getattr(scorer, "judge", None)):
        describe = getattr(owner, "manifest", None)
        if callable(describe):
            return json.loads(json.dumps(describe(), default=str))
    return {}
