"""Regeneration similarity throughput: CLIP % and DINO % of image pairs, batched against one
pair at a time (tiny random encoders unless given folders).

    python -m bench.regeneration --images 32 --size 512
"""
from __future__ import annotations

import tempfile
from typing import Sequence

from . import bench_images, measure, table
from ._onebyone import common_args


def main(argv: Sequence[str] | None = None) -> int:
    from regeneration.similarity import SimilarityScorer
    from vlmjudge.testing import build_tiny_clip, build_tiny_dinov2
    p = common_args("python -m bench.regeneration", __doc__, images=32)
    p.add_argument("--clip", default=None, help="CLIP folder (default: a tiny random one)")
    p.add_argument("--dino", default=None, help="DINOv2 folder (default: a tiny random one)")
    args = p.parse_args(argv)
    root = tempfile.mkdtemp(prefix="vlmjudge-bench-")
    clip = args.clip or build_tiny_clip(f"{root}/clip")
    dino = args.dino or build_tiny_dinov2(f"{root}/dino")
    refs, gens = bench_images(args.images, args.size, seed=3), bench_images(args.images, args.size, seed=4)
    batched = SimilarityScorer(clip, dino, device=args.device)
    single = SimilarityScorer(batched.encoders["clip"], batched.encoders["dino"])
    single.score(refs[:1], gens[:1])  # warm-up
    one_m, one = measure("one pair at a time", len(refs), [],
                         lambda: [s for r, g in zip(refs, gens) for s in single.score([r], [g])])
    all_m, out = measure("batched (default)", len(refs), [], lambda: batched.score(refs, gens))
    if any(abs(a[k] - b[k]) > 1e-3 for a, b in zip(out, one) for k in a):
        raise AssertionError("batched and one-at-a-time similarities disagree")
    print(table([one_m, all_m]))
    print(f"speedup: {all_m.images_per_s / one_m.images_per_s:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
