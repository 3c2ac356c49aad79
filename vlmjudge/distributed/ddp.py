"""Run a function in several local processes joined by a torch.distributed process group:
what DDP validation does to a torchmetrics Metric, on CPU with gloo, for tests and smoke runs.

    def worker(rank, world_size, shard):            # module level, so spawned processes import it
        metric = TerraVisScore(model=path)
        metric.update(shard)
        return float(metric.compute())               # synced over the group: every rank agrees
    values = run_local_group(worker, [first_half, second_half])
"""
from __future__ import annotations

import os
import pickle
import socket
import tempfile
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any


def free_port() -> int:
    """A TCP port on the loopback that was free a moment ago (for MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_local_group(worker: Callable[[int, int, Any], Any], args_per_rank: Sequence[Any], *,
                    backend: str = "gloo", timeout_s: float = 300, init_group: bool = True) -> list[Any]:
    """Call `worker(rank, world_size, args_per_rank[rank])` in one spawned process per rank, with
    torchrun's environment variables set, and return each rank's (picklable) result in rank order.

    With `init_group` the process group is initialised before `worker` runs, by a file rendezvous
    in a folder of the group (a port found free a moment earlier may be taken by another process
    before rank 0 binds it); without it the worker meets the same environment `torchrun` gives,
    and whatever it starts first (accelerate's PartialState, Lightning, a direct
    `init_process_group`) forms the group. `worker` must be
    importable by name (a module-level function); a failure in any rank raises here with that
    rank's traceback. `timeout_s` bounds each collective operation (gloo's timeout).
    """
    import torch.multiprocessing as mp

    world_size = len(args_per_rank)
    if world_size < 1:
        raise ValueError("run_local_group needs at least one rank")
    with tempfile.TemporaryDirectory(prefix="vlmjudge-ddp-") as folder:
        args = (worker, list(args_per_rank), backend, free_port(), timeout_s, folder, init_group)
        mp.start_processes(_entry, args=args, nprocs=world_size, join=True, start_method="spawn")
        results = []
        for rank in range(world_size):
            with open(os.path.join(folder, f"rank{rank}.pkl"), "rb") as fh:
                results.append(pickle.load(fh))
    return results


def _entry(rank: int, worker: Callable, args_per_rank: list, backend: str, port: int, timeout_s: float,
           folder: str, init_group: bool) -> None:
    import torch.distributed as dist

    world_size = len(args_per_rank)
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world_size),
                       "LOCAL_WORLD_SIZE": str(world_size)})
    if init_group:  # a file rendezvous in the group's folder: no port another process can take meanwhile
        dist.init_process_group(backend, init_method="file://" + os.path.join(folder, "rendezvous"), rank=rank,
                                world_size=world_size, timeout=timedelta(seconds=timeout_s))
    try:
        result = worker(rank, world_size, args_per_rank[rank])
        with open(os.path.join(folder, f"rank{rank}.pkl"), "wb") as fh:
            pickle.dump(result, fh)
        if dist.is_initialized():
            dist.barrier()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
