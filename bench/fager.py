"""FAGER evaluation throughput: `Fager(judge).score` with given QA sets on many images against
one image at a time (the QA chunks of one image share its prefix), each path's prefill tokens
beside its ideal (`bench.ideal`).

    python -m bench.fager --images 8 --size 512 --model tiny
"""
from __future__ import annotations

from typing import Sequence

from . import bench_images, build_tiny, judge_on, load_model
from ._onebyone import common_args, compare

QUESTIONS = [("level_1", "Is there a bicycle?"), ("level_1", "Is the bicycle red?"),
             ("level_2", "Is the bicycle leaning on a wall?"), ("level_2", "Is the wall made of bricks?"),
             ("level_3", "Is it daytime?"), ("level_3", "Is the bicycle's chain visible?")]


def qa_sets(prompts: Sequence[str]) -> list:
    """One hand-written QA set per prompt (the evaluation stage only: no agents run)."""
    from fager.schema import QASet
    return [QASet(prompt=p, index=str(i), items=[
        {"question": q, "level": lvl, "category": "existence", "importance": "high", "source_fact": q}
        for lvl, q in QUESTIONS]) for i, p in enumerate(prompts)]


def main(argv: Sequence[str] | None = None) -> int:
    from fager.core import Fager
    args = common_args("python -m bench.fager", __doc__).parse_args(argv)
    model, processor = load_model(build_tiny() if args.model == "tiny" else args.model, args.device, args.dtype)
    images = bench_images(args.images, args.size, seed=2)
    prompts = [f"a red bicycle leaning on a brick wall, view {i}" for i in range(len(images))]
    sets = qa_sets(prompts)
    batched_judge, one_judge = judge_on(model, processor), judge_on(model, processor)
    # warm-up on another image: the vision cache would otherwise hold images[0]
    Fager(one_judge, feedback=False).score(bench_images(1, args.size, seed=99), prompts[:1], qa_sets=sets[:1],
                                           ids=["warm-up"])
    compare(len(images),
            lambda: Fager(batched_judge, feedback=False).score(images, prompts, qa_sets=sets,
                                                                ids=[str(i) for i in range(len(images))]),
            lambda i: Fager(one_judge, feedback=False).score([images[i]], [prompts[i]], qa_sets=[sets[i]], ids=[str(i)]),
            [batched_judge, one_judge], lambda a, b: a.questions == b.questions,
            cuda=next(model.parameters()).device.type == "cuda")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
