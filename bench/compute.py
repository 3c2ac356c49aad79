"""The FLOPs a path's kernels run, counted in an untimed pass: the compute bound of a speedup.

Two paths that run at the same FLOP rate differ in time by their FLOP ratio, so
`reference FLOPs / optimized FLOPs` is the speedup the optimized path reaches by doing less
work alone; a measured speedup above it needs a higher FLOP rate than the reference's, below it
a lower one (more Python per FLOP, smaller kernels). Token counts (`bench.ideal`) miss what this
catches: a suffix that reuses a cached prefix is few tokens, but each of them still attends to
the whole prefix, and the vision tower's attention grows with the square of an image's patches.

Counting uses `torch.utils.flop_counter.FlopCounterMode` (matrix products and convolutions by
their shapes) with one formula added: PyTorch's CPU attention kernel
(`aten._scaled_dot_product_flash_attention_for_cpu`, which it leaves uncounted), counted like
its CUDA kernels, by the shapes it is given: masked and padded positions count, as the kernel
computes them; causal halves do not get halved (the CUDA counts do the same).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

#: Last names of the modules whose work counts as the vision tower's.
VISION_MODULES = ("visual", "vision_tower", "vision_model")


@dataclass(frozen=True)
class Work:
    """FLOPs of one pass, split into the vision tower, text attention and the rest."""

    vision: float
    text_attention: float
    text_other: float

    @property
    def total(self) -> float:
        return self.vision + self.text_attention + self.text_other

    def line(self) -> str:
        return (f"{self.total / 1e9:,.1f} GFLOP (vision tower {self.vision / 1e9:,.1f}, "
                f"text attention {self.text_attention / 1e9:,.1f}, other text {self.text_other / 1e9:,.1f})")


def _cpu_attention_flops(query: Any, key: Any, value: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """The CPU kernel's FLOPs, by its input shapes (grouped-query heads broadcast)."""
    from torch.utils.flop_counter import sdpa_flop_count
    return sdpa_flop_count(query, key, value)


def _is_attention(op: Any) -> bool:
    return "scaled_dot_product" in str(op)


def count_flops(fn: Callable[[], Any]) -> tuple[Any, Work]:
    """(fn's result, the FLOPs its kernels ran). Slower than running `fn` plainly: never time it."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    mapping = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_attention_flops}
    with FlopCounterMode(display=False, depth=None, custom_mapping=mapping) as counter:
        result = fn()
    counts = counter.get_flop_counts()
    everything = counts.get("Global", {})
    towers = [name for name in counts if name.rsplit(".", 1)[-1] in VISION_MODULES]
    outermost = [n for n in towers if not any(n.startswith(t + ".") for t in towers)]
    vision = sum(sum(counts[n].values()) for n in outermost)
    vision_attention = sum(v for n in outermost for op, v in counts[n].items() if _is_attention(op))
    attention = sum(v for op, v in everything.items() if _is_attention(op))
    total = sum(everything.values())
    text_attention = attention - vision_attention
    return result, Work(float(vision), float(text_attention), float(total - vision - text_attention))
