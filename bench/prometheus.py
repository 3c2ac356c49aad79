"""vLLM's Prometheus metrics, from a server's `/metrics` or the in-process engine, as one flat reading.

Why: the two vLLM backends report the same counters (prompt and generated tokens, prefix-cache and
multimodal-cache lookups) and request-time histograms (queue, prefill, decode, end to end), and the
server its HTTP handlers' time; read alike, a run's figures are the difference of two readings, and
the scheduler's queues are sampled during the run (`QueueSampler`). A reading maps a counter's or
gauge's name (no `_total`) and a histogram's `NAME_sum` and `NAME_count` to their totals over labels.
"""
from __future__ import annotations

import threading
import urllib.request
from typing import Any, Callable

#: The scheduler gauges `QueueSampler` reads; the waiting requests held back by transient
#: constraints (a grammar compiling, a blocked status) rather than by capacity.
RUNNING, WAITING = "vllm:num_requests_running", "vllm:num_requests_waiting"
BY_REASON = "vllm:num_requests_waiting_by_reason"
DEFERRED = BY_REASON + ":deferred"
#: The chat-completions handler's label in the server's HTTP histograms.
CHAT_HANDLER = 'handler="/v1/chat/completions"'


def parse_text(text: str) -> dict[str, float]:
    """A Prometheus text exposition as a reading; buckets and `_created` stamps are left out, and
    the HTTP histograms are kept for the chat handler only.

    >>> r = parse_text('vllm:prompt_tokens_total{engine="0"} 64.0\\nvllm:prompt_tokens_created 1.7e9\\n'
    ...                'vllm:e2e_request_latency_seconds_sum{engine="0"} 1.5\\n# HELP x y')
    >>> r["vllm:prompt_tokens"], r["vllm:e2e_request_latency_seconds_sum"], "vllm:prompt_tokens_created" in r
    (64.0, 1.5, False)
    """
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        sample, _, value = line.rpartition(" ")
        name, _, labels = sample.partition("{")
        if name.endswith(("_bucket", "_created")) or (name.startswith("http_") and CHAT_HANDLER not in labels):
            continue
        try:
            number = float(value)
        except ValueError:
            continue
        name = name.removesuffix("_total")
        if name == BY_REASON:
            name += ":" + labels.partition('reason="')[2].partition('"')[0]
        out[name] = out.get(name, 0.0) + number
    return out


def read_server(base: str) -> dict[str, float]:
    """The reading of a server's `/metrics` (`base` without /v1)."""
    with urllib.request.urlopen(base + "/metrics", timeout=30) as response:
        return parse_text(response.read().decode())


def read_engine(llm: Any) -> dict[str, float]:
    """The reading of an in-process engine (`vllm.LLM.get_metrics()`, which needs stats logging on)."""
    out: dict[str, float] = {}
    for metric in llm.get_metrics():
        name = metric.name.removesuffix("_total")
        if hasattr(metric, "sum") and hasattr(metric, "count"):
            pairs = [(name + "_sum", metric.sum), (name + "_count", metric.count)]
        elif hasattr(metric, "value"):
            reason = (getattr(metric, "labels", None) or {}).get("reason") if name == BY_REASON else None
            pairs = [(f"{name}:{reason}" if reason else name, metric.value)]
        else:  # a vector of counters
            pairs = [(name, sum(getattr(metric, "values", ())))]
        for key, value in pairs:
            out[key] = out.get(key, 0.0) + float(value)
    return out


def difference(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    """What a run added: `after` minus `before`, name by name (gauges come out as their change)."""
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


class QueueSampler:
    """The scheduler's running and waiting requests, read every `every_s` seconds while a run lasts."""

    def __init__(self, read: Callable[[], dict[str, float]], every_s: float = 0.25) -> None:
        self._read, self.every_s = read, every_s
        self.samples: list[tuple[float, float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-queue-sampler")

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                reading = self._read()
            except Exception:  # a read that fails (server busy past the timeout) is a missing sample
                continue
            self.samples.append((reading.get(RUNNING, 0.0), reading.get(WAITING, 0.0), reading.get(DEFERRED, 0.0)))

    def __enter__(self) -> "QueueSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def line(self) -> str:
        """Mean and largest running and waiting counts (of the waiting, those deferred), and the
        share of samples with none running.

        >>> q = QueueSampler(dict); q.samples = [(4, 0, 0), (8, 2, 1), (0, 0, 0)]
        >>> q.line()
        'running mean 4.0, max 8; waiting mean 0.7, max 2 (deferred mean 0.3, max 1); idle in 33% of 3 samples'
        """
        if not self.samples:
            return "no samples (the run was shorter than one sampling interval)"
        running, waiting, deferred = ([s[k] for s in self.samples] for k in range(3))
        idle = sum(1 for r in running if r == 0) / len(running)
        return (f"running {_spread(running)}; waiting {_spread(waiting)} (deferred {_spread(deferred)}); "
                f"idle in {idle:.0%} of {len(running)} samples")


def _spread(values: list[float]) -> str:
    return f"mean {sum(values) / len(values):.1f}, max {max(values):.0f}"
