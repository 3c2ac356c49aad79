"""evaluate's multi-process mode for the suite's modules: each process loads the module with
`num_process` / `process_id`, scores its own shard as it adds it (the modules score in
`add_batch`), and process 0's `compute()` only aggregates the stored records.

    metric = load_evaluate_shard("metrics/terravis", experiment_id="run-7", cache_dir="/shared/eval",
                                 model="Qwen/Qwen3-VL-8B-Instruct")
    metric.add_batch(**shard_columns({"images": paths}, metric.num_process, metric.process_id))
    result = metric.compute()        # the result on process 0, None on the others
"""
from __future__ import annotations

import os
from typing import Any


def process_rank(rank: int | None = None, world_size: int | None = None) -> tuple[int, int]:
    """(rank, world size): as given, else from RANK / WORLD_SIZE (set by torchrun and
    `accelerate launch`), else a single process."""
    rank = int(os.environ.get("RANK", "0")) if rank is None else rank
    world_size = int(os.environ.get("WORLD_SIZE", "1")) if world_size is None else world_size
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in 0..{world_size - 1}")
    return rank, world_size


def load_evaluate_shard(path: str, *, experiment_id: str | None = None, cache_dir: str | os.PathLike | None = None,
                        rank: int | None = None, world_size: int | None = None, timeout: float = 600,
                        **init_kwargs: Any):
    """`evaluate.load(path, num_process=, process_id=, experiment_id=, cache_dir=, ...)` for this process.

    With several processes, `experiment_id` (the same in every process, new for every run) and
    `cache_dir` (a folder every process sees) are required: evaluate meets the processes there
    through file locks. `timeout` is how long process 0 waits for the others' shards, so it
    must cover the slowest shard's scoring. Other keywords go to the module (model, backend, ...).
    """
    import evaluate

    rank, world_size = process_rank(rank, world_size)
    if world_size > 1 and (not experiment_id or cache_dir is None):
        raise ValueError("several processes need experiment_id= (one per run) and cache_dir= (a folder all "
                         "processes share), so evaluate can gather their shards")
    kwargs: dict[str, Any] = {"num_process": world_size, "process_id": rank, "timeout": timeout, **init_kwargs}
    if experiment_id:
        kwargs["experiment_id"] = experiment_id
    if cache_dir is not None:
        kwargs["cache_dir"] = os.fspath(cache_dir)
    return evaluate.load(path, **kwargs)
