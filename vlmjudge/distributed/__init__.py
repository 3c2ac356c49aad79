"""Scale-out for every registered method: accelerate/torchrun sharding, evaluate's
multi-process mode, torchmetrics DDP in local process groups, and Ray Data actor pools.

Every path finds the method through the registry (or "module:SPEC"), gives each process or actor
its own judge and moves records as JSON, so it works for any method. Heavy libraries
(accelerate, evaluate, ray, torch.distributed) are imported only when used. Usage and the
command line (`python -m vlmjudge.distributed`, in `vlmjudge.cli.distributed`) are in docs/scaling.md.
"""
from __future__ import annotations

from .accelerate_shards import DistributedScores, score_dataset_accelerate
from .common import (
    resolve_method,
    score_records,
    shard_columns,
    shard_range,
    with_global_ids,
)
from .ddp import run_local_group
from .evaluate_shards import load_evaluate_shard, process_rank
from .ray_pool import ScorerActor, score_columns_ray, score_dataset_ray

__all__ = [
    "DistributedScores",
    "ScorerActor",
    "load_evaluate_shard",
    "process_rank",
    "resolve_method",
    "run_local_group",
    "score_columns_ray",
    "score_dataset_accelerate",
    "score_dataset_ray",
    "score_records",
    "shard_columns",
    "shard_range",
    "with_global_ids",
]
