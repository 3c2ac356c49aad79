"""The host's load around each backend's run, so a figure taken on a busy machine says so.

Why: on a shared host the same run slowed 4 to 10 times; published figures must not depend on what
else ran. Around each run `LoadWatch` records the load averages before and after, and (Linux) the CPU
time other processes used during it: the machine's busy time from /proc/stat less this process's
and its descendants' (engines, servers). A process of ours that starts and ends within the run
counts as another's, so the share errs high. `loaded` says when a figure is not a quiet-machine one.
`ours` splits this tree's CPU by process (the client, an API server, an engine's core and workers):
on a host whose cores are all busy, the seconds a backend adds are the CPU its processes add.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

#: Cores' worth of others' CPU above which a run counts as loaded.
OTHERS_LIMIT = 0.25
#: Load average (per core) before a run above which it counts as loaded when others' CPU is unknown.
LOAD_PER_CORE_LIMIT = 0.5


@dataclass
class HostLoad:
    """Load averages (1 and 5 minutes) before and after a run, and the cores others used during it."""

    before: tuple[float, float]
    after: tuple[float, float]
    others_cores: float | None
    cores: int
    #: CPU seconds of this process tree during the run, by process label (`_label`); empty where unknown.
    ours: dict[str, float] = field(default_factory=dict)

    def loaded(self) -> bool:
        """Whether other work may have slowed the run."""
        if self.others_cores is not None:
            return self.others_cores > OTHERS_LIMIT
        return self.before[0] > LOAD_PER_CORE_LIMIT * self.cores

    def line(self, name: str) -> str:
        """One line: the load averages and others' cores.

        >>> HostLoad((0.2, 0.4), (1.9, 0.8), 0.05, 2).line("vllm")
        'host load of vllm: load average 0.20 / 0.40 before, 1.90 / 0.80 after (1 / 5 min; 2 cores); others used 0.05 cores during the run'
        """
        others = "unknown" if self.others_cores is None else f"{self.others_cores:.2f} cores"
        return (f"host load of {name}: load average {self.before[0]:.2f} / {self.before[1]:.2f} before, "
                f"{self.after[0]:.2f} / {self.after[1]:.2f} after (1 / 5 min; {self.cores} cores); "
                f"others used {others} during the run")

    def cpu_line(self, name: str) -> str | None:
        """Where this tree's CPU went during the run, by process, busiest first; None when unknown.

        >>> HostLoad((0, 0), (0, 0), 0.0, 2, {"client": 3.52, "VLLM::Worker": 9.4}).cpu_line("vllm")
        'CPU of vllm (seconds, by process): 12.9 in all; VLLM::Worker 9.4, client 3.5'
        """
        if not self.ours:
            return None
        parts = ", ".join(f"{label} {seconds:.1f}" for label, seconds
                          in sorted(self.ours.items(), key=lambda kv: -kv[1]) if seconds >= 0.05)
        return f"CPU of {name} (seconds, by process): {sum(self.ours.values()):.1f} in all; {parts}"


class LoadWatch:
    """A context that measures the host's load around the block (`load` after it ends)."""

    def __enter__(self) -> "LoadWatch":
        self.load: HostLoad | None = None
        self._before = _loadavg()
        self._busy, self._ours, self._start = _busy_jiffies(), _our_processes(), time.monotonic()
        return self

    def __exit__(self, *exc: Any) -> None:
        wall = time.monotonic() - self._start
        busy, ours = _busy_jiffies(), _our_processes()
        others, by_label = None, {}
        if None not in (busy, ours, self._busy, self._ours) and wall > 0:
            tick = os.sysconf("SC_CLK_TCK")
            used = sum(t for _, t in ours.values()) - sum(t for _, t in self._ours.values())
            others = max(0.0, ((busy - self._busy) - used) / tick / wall)
            for pid, (label, ticks) in ours.items():
                by_label[label] = by_label.get(label, 0.0) + (ticks - self._ours.get(pid, (label, 0))[1]) / tick
        self.load = HostLoad(self._before, _loadavg(), others, os.cpu_count() or 1, by_label)


def _loadavg() -> tuple[float, float]:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return float("nan"), float("nan")
    return one, five


def _busy_jiffies() -> int | None:
    """The machine's non-idle CPU time (clock ticks) from /proc/stat; None where there is none."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle  # guest time is already inside user time


def _our_processes() -> dict[int, tuple[str, int]] | None:
    """{pid: (label, user + system clock ticks)} of this process and its living descendants, from /proc."""
    try:
        parents: dict[int, int] = {}
        times: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                stat = _stat(int(entry))
                if stat is not None:
                    parents[int(entry)], times[int(entry)] = stat
    except OSError:
        return None
    ours, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in ours:
                ours.add(child)
                frontier.append(child)
    return {pid: (_label(pid), times[pid]) for pid in ours if pid in times}


def _label(pid: int) -> str:
    """What a process of ours is: "client" (this one), a Python module run with -m (an API server),
    else its name (vLLM names its engine core and workers)."""
    if pid == os.getpid():
        return "client"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
        with open(f"/proc/{pid}/comm") as f:
            name = f.read().strip()
    except OSError:
        return "gone"
    if "-m" in argv[:-1] and not name.startswith("VLLM::"):
        return argv[argv.index("-m") + 1].rpartition(".")[2] or name
    return name


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, user + system ticks) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the name may hold spaces; fields after it start at state
    return int(fields[1]), int(fields[11]) + int(fields[12])
