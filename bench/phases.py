"""Where each backend's time went: encode, prefill, decode, queue, front end, transport.

Why: a ratio of seconds says which backend is slower, not where. Each backend reports what it can:
- transformers (measured in this process, wall seconds): forward hooks time the vision tower
  (encode) and the language model's forwards, a prompt's (prefill) or one token a row (decode);
  `other` is the rest of the wall time (image preprocessing, tokenizing, grammar, Python).
- vllm (the engine's request histograms, request-seconds summed over requests, which overlap):
  queue, prefill (the vision tower runs inside it), decode; image preprocessing is not reported.
- vllm-serve: the same, plus the server's front end (its chat handler's time less the engine's
  end to end: parsing, template, images, the answer's JSON) and transport (the client's time
  waiting on each request less the handler's: network and the client's own JSON).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from . import grid

#: The phases, in the table's order.
PHASES = ("encode", "prefill", "decode", "queue", "frontend", "transport", "other")


@dataclass
class Phases:
    """Seconds per phase (None: the backend cannot report it), in `unit`, and where they come from."""

    seconds: dict[str, float | None] = field(default_factory=dict)
    unit: str = "wall s"
    source: str = ""
    requests: int = 0


@contextmanager
def torch_phases(model: Any) -> Iterator[Phases]:
    """Time the vision tower and the language model's forwards of a transformers `model` while the
    block runs; on exit the Phases hold wall seconds (the block's wall time less them is `other`)."""
    import torch
    vision, language = _tower(model, ("visual", "vision_tower", "vision_model")), _tower(model, ("language_model",))
    cuda = next(model.parameters()).device.type == "cuda"
    totals = {"encode": 0.0, "prefill": 0.0, "decode": 0.0}
    starts: list[float] = []

    def now() -> float:
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def begin(*_: Any, **__: Any) -> None:
        starts.append(now())

    def end_as(phase: str | None):
        def end(_module: Any, args: Any, kwargs: Any, _output: Any) -> None:
            name = phase or _prefill_or_decode(args, kwargs)
            totals[name] += now() - starts.pop()
        return end

    hooks = []
    for module, phase in ((vision, "encode"), (language, None)):
        if module is not None:
            hooks.append(module.register_forward_pre_hook(begin, with_kwargs=True))
            hooks.append(module.register_forward_hook(end_as(phase), with_kwargs=True))
    phases = Phases(unit="wall s", source="measured: forward hooks on the vision tower and the language model")
    start = time.perf_counter()
    try:
        yield phases
    finally:
        for hook in hooks:
            hook.remove()
        wall = time.perf_counter() - start
        phases.seconds = {**totals, "queue": None, "frontend": None, "transport": None,
                          "other": wall - sum(totals.values())}
        if vision is None or language is None:
            phases.source += f" (no {'vision tower' if vision is None else 'language model'} found: not timed)"


def _tower(model: Any, names: tuple[str, ...]) -> Any:
    """The first submodule whose attribute name is one of `names` (Qwen-VL: model.visual, ...)."""
    for name, module in model.named_modules():
        if name.rpartition(".")[2] in names:
            return module
    return None


def _prefill_or_decode(args: Any, kwargs: Any) -> str:
    """A forward over one new token a row decodes; over more it prefills."""
    for value in (kwargs.get("inputs_embeds"), kwargs.get("input_ids"), *(args or ())):
        shape = getattr(value, "shape", None)
        if shape is not None and len(shape) >= 2:
            return "decode" if shape[1] == 1 else "prefill"
    return "prefill"


def engine_phases(run: dict[str, float], client_seconds: float | None = None) -> Phases:
    """Phases of a vLLM run from its metric differences (`bench.prometheus`), in request-seconds;
    with the client's request seconds (a server) also the front end and transport.

    >>> run = {"vllm:request_queue_time_seconds_sum": 1.0, "vllm:request_prefill_time_seconds_sum": 6.0,
    ...        "vllm:request_decode_time_seconds_sum": 2.0, "vllm:e2e_request_latency_seconds_sum": 9.5,
    ...        "vllm:e2e_request_latency_seconds_count": 10, "http_request_duration_seconds_sum": 12.0}
    >>> p = engine_phases(run, client_seconds=13.0)
    >>> p.seconds["frontend"], p.seconds["transport"], p.requests
    (2.5, 1.0, 10)
    """
    seconds: dict[str, float | None] = {
        "encode": None, "prefill": run.get("vllm:request_prefill_time_seconds_sum"),
        "decode": run.get("vllm:request_decode_time_seconds_sum"),
        "queue": run.get("vllm:request_queue_time_seconds_sum"), "frontend": None, "transport": None,
        "other": None}
    e2e = run.get("vllm:e2e_request_latency_seconds_sum")
    handler = run.get("http_request_duration_seconds_sum")
    source = "vLLM's request histograms (measured, summed over requests; the vision tower is in prefill)"
    if handler is not None and e2e is not None:
        seconds["frontend"] = handler - e2e
        source += "; front end = the chat handler's time less the engine's end to end"
    if client_seconds is not None and handler is not None:
        seconds["transport"] = client_seconds - handler
        source += "; transport = the client's request time less the handler's (estimates)"
    return Phases(seconds, "request-s", source, int(run.get("vllm:e2e_request_latency_seconds_count", 0)))


def phase_table(rows: dict[str, tuple[float, Phases]]) -> str:
    """One line per backend: its wall seconds, then each phase in its unit ("-": not reported)."""
    header = ["backend", "wall s", "unit", *PHASES, "requests"]
    body = [[name, f"{wall:.1f}", p.unit, *(_cell(p.seconds.get(k)) for k in PHASES), str(p.requests or "-")]
            for name, (wall, p) in rows.items()]
    return grid(header, body)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
