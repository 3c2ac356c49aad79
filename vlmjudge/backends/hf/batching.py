"""Which requests run together, how many fit, and preparing the next batch while one runs.

Requests are grouped into units (see `prefix.units`; without prefix reuse every request is its
own unit), units sorted by size (images, pixels, tokens) so that a batch pads little, and
packed greedily under three limits: units per batch (the configured batch size: full-length
rows), requests per batch (lowered after an out-of-memory error), and on CUDA a token budget
from free memory. Each batch lists its requests in their original order, so a chunk that
fits one batch runs exactly as given. `Prefetcher` runs the processor (image decoding,
resizing, tokenising) for the next batch on a worker thread with its own processor copy, since
tokenizers are not safe to share between threads; it pays only where a core is free for it
(`prefetch_pays`).
"""
from __future__ import annotations

import copy
import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Sequence

from .prefix.units import Prompt, Unit

#: Share of free accelerator memory a batch may plan to use (the rest: fragmentation, vision tower).
MEMORY_SHARE = 0.5
#: Visual tokens assumed per image when the processor cannot say.
DEFAULT_IMAGE_TOKENS = 1280


def token_budget(model: Any, share: float = MEMORY_SHARE) -> int | None:
    """Tokens (KV cache + live activations) a batch may hold on CUDA; None elsewhere."""
    import torch
    device = next(model.parameters()).device
    if device.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    cfg = model.config.get_text_config()
    heads = getattr(cfg, "num_attention_heads", 1)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    elt = torch.finfo(model.dtype).bits // 8
    kv = 2 * cfg.num_hidden_layers * kv_heads * head_dim * elt
    act = (6 * cfg.hidden_size + 3 * getattr(cfg, "intermediate_size", 4 * cfg.hidden_size)) * elt
    return max(1, int(share * free / (kv + act)))


def image_tokens(processor: Any, sizes: Sequence[tuple[int, int]]) -> list[int]:
    """Visual tokens per image of (height, width), from the processor when it can tell."""
    if not sizes:
        return []
    try:
        data = processor._get_num_multimodal_tokens(image_sizes=[list(s) for s in sizes])
        counts = data["num_image_tokens"] if isinstance(data, dict) else data.num_image_tokens
        return [int(c) for c in counts]
    except Exception:  # an optional processor API: fall back to a typical count
        return [DEFAULT_IMAGE_TOKENS] * len(sizes)


def plan_batches(units: Sequence[Unit], prompts: Sequence[Prompt], cost: Callable[[Unit], int],
                 max_units: int, max_rows: int, budget: int | None,
                 counted: Callable[[Unit], bool] = lambda u: True) -> list[list[int]]:
    """Batches of request indices (each in original order), units kept whole where they fit.
    A unit `counted` says False of (one served in place from the prefix KV store) does not count
    against `max_units`; the row limit and the token budget still hold it."""
    pieces: list[Unit] = []
    for unit in units:  # a unit with more requests than a batch may hold is cut (prefix rerun)
        for s in range(0, len(unit.rows), max_rows):
            pieces.append(Unit(unit.rows[s:s + max_rows], unit.split))

    def size(u: Unit) -> tuple:
        head = prompts[u.rows[0]]
        return (len(head.image_key), head.pixels, len(head.ids))

    pieces.sort(key=size)
    batches: list[list[int]] = []
    current: list[int] = []
    n_units = tokens = 0
    for piece in pieces:
        c, weight = cost(piece), int(counted(piece))
        full = n_units + weight > max_units or len(current) + len(piece.rows) > max_rows \
            or (budget is not None and tokens + c > budget)
        if current and full:
            batches.append(sorted(current))
            current, n_units, tokens = [], 0, 0
        current.extend(piece.rows)
        n_units += weight
        tokens += c
    if current:
        batches.append(sorted(current))
    return batches


def prefetch_pays(model: Any) -> bool:
    """Whether preparing the next batch on a worker thread overlaps with the forward: on an
    accelerator (the main thread mostly waits for its kernels), or on a CPU where this process
    may use more cores than torch's intra-op threads. Where torch's threads take every core,
    the worker only takes turns with them (TerraVis on 16 images at 1024² on 2 cores: 4.70 s
    with the worker, 4.48 s without, median of 6 runs interleaved)."""
    import torch
    if next(model.parameters()).device.type != "cpu":
        return True
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores > torch.get_num_threads()


class Prefetcher:
    """Prepares batches ahead on one worker thread (kept for the judge's life); `take` returns
    a prepared batch (waiting for it) or None when that batch was never submitted (e.g. a half
    after out-of-memory), and the caller prepares it itself. `one_thread`: the worker's torch
    ops run on one intra-op thread (`_one_thread`), for a model whose forward runs on the CPU
    cores too; beside an accelerator the worker keeps torch's threads."""

    def __init__(self, prepare: Callable[[Any, list], Any], processor: Any, one_thread: bool = True) -> None:
        self._prepare = _one_thread(prepare) if one_thread else prepare
        self._processor = copy.deepcopy(processor)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vlmjudge-prefetch")
        self._pending: dict[tuple, Future] = {}

    @staticmethod
    def key(batch: Sequence[Any]) -> tuple:
        return tuple(id(r) for r in batch)

    def submit(self, batch: list) -> None:
        if self.key(batch) not in self._pending:
            self._pending[self.key(batch)] = self._pool.submit(self._prepare, self._processor, batch)

    def take(self, batch: Sequence[Any]) -> Any:
        future = self._pending.pop(self.key(batch), None)
        return future.result() if future is not None else None

    def clear(self) -> None:
        """Forget batches not taken (a call ended early); running work finishes unobserved."""
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()


def _one_thread(prepare: Callable[[Any, list], Any]) -> Callable[[Any, list], Any]:
    """`prepare` with its torch ops on one intra-op thread. A second thread that runs OpenMP
    regions of its own keeps a second team of OpenMP workers alive; with more such workers than
    cores, libgomp stops spinning between regions in every team, and each small op of the
    model's thread then waits for its workers to wake (a 103 x 64 matrix product: 11 us before
    the worker's first batch, 100-170 us after it, on 2 cores)."""
    def prepare_on_one_thread(processor: Any, batch: list) -> Any:
        import torch
        held = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return prepare(processor, batch)
        finally:  # the count new threads start with is process-wide: put it back
            torch.set_num_threads(held)
    return prepare_on_one_thread


#: Requests per batch before any out-of-memory error has lowered it.
UNLIMITED_ROWS = sys.maxsize


def is_out_of_memory(exc: BaseException) -> bool:
    """A CUDA (or other accelerator) out-of-memory error, by type or by message."""
    import torch
    oom_types = tuple(t for t in (getattr(torch.cuda, "OutOfMemoryError", None),
                                  getattr(torch, "OutOfMemoryError", None)) if t is not None)
    if oom_types and isinstance(exc, oom_types):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def release_cuda_memory() -> None:
    """Free what an out-of-memory batch left behind before the halved retry."""
    import gc

    import torch
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
