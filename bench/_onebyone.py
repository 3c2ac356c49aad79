"""A batched path against the same work one image at a time: the shared body of the
VIEScore2 and FAGER benchmarks. Each path's prefill is printed beside its ideal (`bench.ideal`)."""
from __future__ import annotations

import argparse
from typing import Any, Callable, Sequence

from . import table
from .ideal import IDEAL_COLUMNS, measure_with_ideal, prefill_over_ideal


def common_args(prog: str, doc: str, images: int = 8, size: int = 512) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    p.add_argument("--images", type=int, default=images)
    p.add_argument("--size", type=int, default=size, help="image side in pixels")
    p.add_argument("--model", default="tiny", help="'tiny' (built here) or a checkpoint folder")
    p.add_argument("--device", default=None)
    p.add_argument("--dtype", default=None)
    return p


def compare(n: int, batched: Callable[[], list], one: Callable[[int], list], judges: Sequence[Any],
            same: Callable[[Any, Any], bool], cuda: bool = False) -> None:
    """Time the batched path and the one-at-a-time path; their results must agree. The last two
    lines are `prefill/ideal: <batched prefill / its ideal>` and `speedup: <batched / one at a time>`."""
    one_m, one_out = measure_with_ideal("one image at a time", n, judges[1:] or judges,
                                        lambda: [r for i in range(n) for r in one(i)], cuda)
    all_m, all_out = measure_with_ideal("batched (default)", n, judges[:1], batched, cuda)
    if len(all_out) != len(one_out) or not all(same(a, b) for a, b in zip(all_out, one_out)):
        raise AssertionError("the batched path and the one-at-a-time path disagree")
    print(table([one_m, all_m], IDEAL_COLUMNS))
    print(f"prefill/ideal: {prefill_over_ideal(all_m):.3f}")
    print(f"speedup: {all_m.images_per_s / one_m.images_per_s:.2f}")
