"""How many intra-op threads a CPU forward uses while other processes share the cores.

Why: each OpenMP region of a torch op ends at a barrier, so it waits for its slowest thread. When
other busy processes hold the cores, one of our threads is often descheduled for a whole time slice,
and every small op of a forward (decoding is thousands of them) then waits for it. On 2 cores beside
busy processes, TerraVis on 8 images at 1024² took 24.2 s on 2 threads and 10.4 s on 1, the same
run, side by side. So before each batch the judge measures what the others used since the last
batch and runs on the cores they leave. The others' demand is measured, not guessed: the machine's
busy CPU time (/proc/stat) minus this process's. Where the cores are saturated that usage is the
others' fair share beside our threads, so their demand is scaled back up by the shares' ratio.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

#: Seconds between two measurements: shorter windows read the kernel's 10 ms ticks too coarsely.
MIN_WINDOW_S = 0.2
#: Idle cores under which the machine counts as saturated (every runnable thread shares the cores).
SATURATED_IDLE = 0.25
#: Cores the others must leave free beyond a whole one before a thread is given back (hysteresis).
MARGIN = 0.25


def machine_busy_seconds() -> float | None:
    """CPU seconds all cores of the machine have spent busy since boot; None where /proc/stat is
    not readable (then nothing adapts)."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if len(fields) < 5 or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:]]
    idle = ticks[3] + ticks[4]  # idle and iowait
    guest = sum(ticks[8:10])  # guest time is counted in user and nice already
    return (sum(ticks) - idle - guest) / os.sysconf("SC_CLK_TCK")


def own_busy_seconds() -> float:
    """CPU seconds this process has spent, all its threads."""
    times = os.times()
    return times.user + times.system


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def others_demand(others: float, own: float, threads: int, cores: int) -> float:
    """Cores the other processes would use, from what they and we used over a window (in cores).

    On a saturated machine every runnable thread gets an equal share, so the others' usage is
    their share beside our `threads`: demand = threads x others / own. Elsewhere usage is demand.

    Examples:
        Two busy processes beside our one thread on 2 cores: each of the three gets 2/3 of a core.

        >>> round(others_demand(others=4 / 3, own=2 / 3, threads=1, cores=2), 6)
        2.0
        >>> others_demand(others=0.1, own=1.5, threads=2, cores=2)  # cores left idle: no contention
        0.1
    """
    if others + own < cores - SATURATED_IDLE or own <= 0:
        return others
    return threads * others / own


@dataclass
class CoreShare:
    """The intra-op thread count for the next forward: at most `ceiling` (torch's count when the
    call began), at least 1, no more than the cores the others' demand leaves.

    Examples:
        >>> share = CoreShare(ceiling=2, cores=2)
        >>> share.threads_for(demand=1.0), share.threads_for(demand=2.0), share.threads_for(demand=0.2)
        (1, 1, 2)
    """

    ceiling: int
    cores: int = field(default_factory=usable_cores)
    threads: int = 0
    _last: tuple[float, float, float] | None = None

    def __post_init__(self) -> None:
        self.threads = self.threads or self.ceiling

    def threads_for(self, demand: float) -> int:
        """The thread count where the others want `demand` cores."""
        self.threads = max(1, min(self.ceiling, int(self.cores - demand + 1 - MARGIN)))
        return self.threads

    def measure(self) -> int:
        """The thread count from the window since the last call: the last count for the first call,
        a window under `MIN_WINDOW_S`, or where /proc/stat cannot be read."""
        now, machine, own = time.monotonic(), machine_busy_seconds(), own_busy_seconds()
        if machine is None:
            return self.threads
        if self._last is not None and now - self._last[0] < MIN_WINDOW_S:
            return self.threads
        last, self._last = self._last, (now, machine, own)
        if last is None:
            return self.threads
        wall = now - last[0]
        own_cores = (own - last[2]) / wall
        others_cores = max(0.0, (machine - last[1]) / wall - own_cores)
        return self.threads_for(others_demand(others_cores, own_cores, self.threads, self.cores))


#: The environment variable that turns the governor off by default ("0"), e.g. for bitwise-equal
#: reruns on a machine whose load varies: a thread count can change the order of a reduction.
ENV = "VLMJUDGE_SHARE_CORES"


def share_cores_default() -> bool:
    """On unless VLMJUDGE_SHARE_CORES is 0/false/no/off, and only where there is a core to give."""
    if os.environ.get(ENV, "").strip().lower() in {"0", "false", "no", "off"}:
        return False
    return usable_cores() > 1 and machine_busy_seconds() is not None


@dataclass
class ThreadsForCall:
    """torch's intra-op thread count over one judge call: set from `share` before each batch,
    put back to `held` when the call ends (torch's count is the caller's, not the judge's)."""

    held: int
    share: CoreShare | None

    def before_batch(self) -> None:
        if self.share is None:
            return
        import torch
        wanted = self.share.measure()
        if wanted != torch.get_num_threads():
            torch.set_num_threads(wanted)

    def restore(self) -> None:
        if self.share is None:
            return
        import torch
        if torch.get_num_threads() != self.held:
            torch.set_num_threads(self.held)
