"""Scale-out for every registered method: accelerate/torchrun sharding, evaluate's
multi-process mode, torchmetrics DDP in local process groups, and Ray Data actor pools.

All paths find the method through the registry (or "module:SPEC"), give every process or actor
its own judge, and move records as JSON, so they work for any method:

    from vlmjudge.distributed import score_dataset_accelerate     # under accelerate launch / torchrun
    out = score_dataset_accelerate("terravis", {"image": paths}, model="Qwen/Qwen3-VL-8B-Instruct")
    out.records                                                    # every shard's records, input order

    accelerate launch --num_processes 4 -m vlmjudge.distributed terravis --input images/ --output r.jsonl

Heavy libraries (accelerate, evaluate, ray, torch.distributed) are imported only when used.
Modules: common (methods, shards, ids, scoring to JSON), accelerate_shards, ddp, evaluate_shards,
ray_pool, cli (`python -m vlmjudge.distributed`).
"""
from __future__ import annotations

from .accelerate_shards import DistributedScores, score_dataset_accelerate
from .cli import main
from .common import (
    resolve_method,
    score_records,
    shard_columns,
    shard_range,
    with_global_ids,
)
from .ddp import run_local_group
from .evaluate_shards import load_evaluate_shard, process_rank, store_scored_rows
from .ray_pool import ScorerActor, score_columns_ray, score_dataset_ray

__all__ = [
    "DistributedScores",
    "ScorerActor",
    "load_evaluate_shard",
    "main",
    "process_rank",
    "resolve_method",
    "run_local_group",
    "score_columns_ray",
    "score_dataset_accelerate",
    "score_dataset_ray",
    "score_records",
    "shard_columns",
    "shard_range",
    "store_scored_rows",
    "with_global_ids",
]
