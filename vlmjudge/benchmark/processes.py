"""Where this process stands in a launch: under `accelerate launch` or `torchrun` the benchmark's
images and judgements are split into contiguous shards (`vlmjudge.distributed`'s split) and
gathered on process 0, which writes every file; a plain run is one process and needs no group.
"""
from __future__ import annotations

import os
from typing import Any

from ..distributed.common import shard_range


class Processes:
    """This process's rank among `world` processes, its share of n tasks, gathering and waiting.

    Examples:
        >>> alone = Processes()
        >>> alone.rank, alone.world, alone.is_main, alone.shard(5), alone.gather({"a": 1})
        (0, 1, True, (0, 5), [{'a': 1}])
    """

    def __init__(self, state: Any = None) -> None:
        self.state = state
        self.rank = int(state.process_index) if state is not None else 0
        self.world = int(state.num_processes) if state is not None else 1

    @classmethod
    def current(cls) -> Processes:
        """The processes of this launch: accelerate's state when WORLD_SIZE says there are several."""
        if int(os.environ.get("WORLD_SIZE", "1") or 1) <= 1:
            return cls()
        from ..distributed.accelerate_shards import default_state
        return cls(default_state())

    @property
    def is_main(self) -> bool:
        """Process 0: it writes the runs, manifests and reports."""
        return self.rank == 0

    @property
    def device(self) -> str | None:
        """This process's device in a launch (each process judges on its own GPU); None alone."""
        return None if self.state is None else str(self.state.device)

    def device_for(self, given: str | None) -> str | None:
        """The device a model loads on here: in a launch, this process's own where none or a bare
        "cuda" is given (else every process would load on the first GPU); the given one otherwise.

        Examples:
            >>> Processes().device_for(None), Processes().device_for("cuda:1")
            (None, 'cuda:1')
        """
        if self.device is not None and given in (None, "cuda"):
            return self.device
        return given

    def shard(self, n: int) -> tuple[int, int]:
        """Start and end of this process's contiguous share of n tasks."""
        return shard_range(n, self.world, self.rank)

    def gather(self, value: Any) -> list[Any]:
        """Every process's `value`, in rank order, on every process."""
        if self.state is None:
            return [value]
        from accelerate.utils import gather_object
        return list(gather_object([value]))

    def wait(self) -> None:
        """Wait until every process gets here (files written by one are then seen by all)."""
        if self.state is not None:
            self.state.wait_for_everyone()
