"""Benchmarks that print ratios measured side by side in one process.

The machine these run on may be shared and loaded, so absolute rates drift; every benchmark
runs the paths it compares on the same images, in the same process, with the same model,
and reports their ratio. Shared here: images, model loading (a tiny random checkpoint or a
folder), a meter (wall time, judge counters, peak memory) and a logit shift that forces the
share of positive decisions for a random model.
"""
from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from PIL import Image

from vlmjudge import Judge, load_judge


def bench_images(n: int, size: int, seed: int = 0) -> list[Image.Image]:
    """n smooth random RGB images of size x size (colour fields plus a little noise)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        base = Image.fromarray(rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)).resize((size, size), Image.BICUBIC)
        noise = rng.normal(0, 12, (size, size, 3))
        out.append(Image.fromarray(np.clip(np.asarray(base, dtype=np.float32) + noise, 0, 255).astype(np.uint8)))
    return out


def build_tiny(family: str = "qwen3_vl", yes_bias: float = 0.0, folder: str | None = None) -> str:
    """A tiny checkpoint with realistic visual-token counts (a 1024^2 image: ~1,024 tokens)."""
    from vlmjudge.testing import build_tiny_vlm
    folder = folder or tempfile.mkdtemp(prefix="vlmjudge-bench-")
    return build_tiny_vlm(os.path.join(folder, f"{family}-{yes_bias:.3f}"), family=family,
                          image_tokens="realistic", yes_bias=yes_bias)


def load_model(path: str, device: str | None = None, dtype: str | None = None) -> tuple[Any, Any]:
    """(model, processor) through the transformers backend's own loading code."""
    judge = load_judge(path, backend="transformers", device=device, dtype=dtype)
    return judge.model, judge.processor


def judge_on(model: Any, processor: Any, **kwargs: Any) -> Judge:
    """A fresh transformers judge (zeroed counters) on an already loaded model."""
    return load_judge(model, backend="transformers", processor=processor, progress=False, **kwargs)


# -- measuring -------------------------------------------------------------------------------
def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: no sampler
        return 0


class _PeakSampler:
    """Peak resident memory above the start, sampled every few milliseconds (CPU runs)."""

    def __init__(self, every_s: float = 0.005) -> None:
        self.every_s, self.base, self.peak = every_s, _rss_bytes(), 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_bytes() - self.base)
            time.sleep(self.every_s)

    def __enter__(self) -> "_PeakSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes() - self.base)


@dataclass
class Measure:
    """One timed path: seconds, images, the judges' counters, peak memory."""

    name: str
    seconds: float
    images: int
    prefill_tokens: int
    images_encoded: int
    generated_tokens: int
    peak_bytes: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def images_per_s(self) -> float:
        return self.images / self.seconds


def measure(name: str, n_images: int, judges: Sequence[Judge], fn: Callable[[], Any],
            cuda: bool = False) -> tuple[Measure, Any]:
    """Run fn once and measure it; `judges` are the judges it uses (their counters are read)."""
    import torch
    before = [j.stats.as_dict() for j in judges]
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    with _PeakSampler() as sampler:
        start = time.perf_counter()
        result = fn()
        if cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() - base if cuda else sampler.peak
    after = [j.stats.as_dict() for j in judges]
    delta = {k: sum(a.get(k, 0) - b.get(k, 0) for a, b in zip(after, before))
             for k in dict.fromkeys(k for a in after for k, v in a.items() if isinstance(v, (int, float)))}
    m = Measure(name, seconds, n_images, delta["prefill_tokens"], delta["images_encoded"],
                delta["generated_tokens"], peak)
    m.extra["stats"] = delta
    return m, result


def table(measures: Sequence[Measure], columns: Sequence[tuple[str, Callable[[Measure], Any]]] = ()) -> str:
    """A plain-text table: one row per path."""
    cols = [("path", lambda m: m.name), ("images/s", lambda m: f"{m.images_per_s:.3f}"),
            ("seconds", lambda m: f"{m.seconds:.1f}"), ("prefill tokens", lambda m: m.prefill_tokens),
            ("images encoded", lambda m: m.images_encoded), ("generated", lambda m: m.generated_tokens),
            ("peak MiB", lambda m: f"{m.peak_bytes / 2**20:.0f}"), *columns]
    return grid([name for name, _ in cols], [[str(get(m)) for _, get in cols] for m in measures])


def grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, two spaces apart, the header first."""
    rows = [list(header)] + [list(r) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)


# -- forcing the decision rate of a random model ---------------------------------------------
def option_token_ids(tokenizer: Any, word: str) -> list[int]:
    """The ids of `word` as a bare token and after a space (both follow prompts)."""
    ids = []
    for form in (word, " " + word):
        pieces = tokenizer.encode(form, add_special_tokens=False)
        if len(pieces) == 1 and pieces[0] not in ids:
            ids.append(pieces[0])
    if not ids:
        raise ValueError(f"{word!r} is not a single token in this tokenizer")
    return ids


class LogitShift:
    """Adds `shift` to the logits of some token ids (a forward hook on the LM head), so that a
    random model's yes-rate can be set; every path of a benchmark sees the same shifted model."""

    def __init__(self, model: Any, token_ids: Sequence[int], shift: float = 0.0) -> None:
        self.token_ids, self.shift = list(token_ids), shift
        self._handle = model.get_output_embeddings().register_forward_hook(self._hook)

    def _hook(self, module: Any, args: Any, output: Any) -> Any:
        if self.shift == 0.0:
            return output
        output = output.clone()
        output[..., self.token_ids] += self.shift
        return output

    def remove(self) -> None:
        self._handle.remove()


def shift_for_rate(margins: Sequence[float], rate: float) -> float:
    """The shift that makes a share `rate` of these yes-minus-no margins positive."""
    if not 0.0 < rate < 1.0:
        raise ValueError(f"a positive rate must be in (0, 1), got {rate}")
    return -float(np.quantile(np.asarray(margins, dtype=np.float64), 1.0 - rate))
