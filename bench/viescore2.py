"""VIEScore2 throughput: `VIEScore2(judge).score` on many images against one image at a time,
each path's prefill tokens beside its ideal (`bench.ideal`).

    python -m bench.viescore2 --images 8 --size 512 --model tiny
"""
from __future__ import annotations

from typing import Sequence

from . import bench_images, build_tiny, judge_on, load_model
from ._onebyone import common_args, compare

PROMPTS = ["a red bicycle leaning on a brick wall", "two cats asleep on a sofa", "a lighthouse at dusk",
           "a bowl of lemons on a wooden table"]


def main(argv: Sequence[str] | None = None) -> int:
    from viescore2.core import VIEScore2
    args = common_args("python -m bench.viescore2", __doc__).parse_args(argv)
    model, processor = load_model(build_tiny() if args.model == "tiny" else args.model, args.device, args.dtype)
    images = bench_images(args.images, args.size, seed=1)
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(len(images))]
    batched_judge, one_judge = judge_on(model, processor), judge_on(model, processor)
    # warm-up (grammar compilation) on another image: the vision cache would otherwise hold images[0]
    VIEScore2(one_judge).score(bench_images(1, args.size, seed=99), prompts[:1])
    compare(len(images), lambda: VIEScore2(batched_judge).score(images, prompts),
            lambda i: VIEScore2(one_judge).score([images[i]], [prompts[i]]), [batched_judge, one_judge],
            lambda a, b: (a.text, a.scores) == (b.text, b.scores),
            cuda=next(model.parameters()).device.type == "cuda")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
