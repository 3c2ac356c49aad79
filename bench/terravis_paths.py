"""TerraVis throughput: the public release's pattern against the library's default path.

    python -m bench.terravis --images 16 --size 1024 --model tiny   (this module, through bench.terravis)

Runs the reference (per image: eligibility, 18 questions in one batch with full constrained
answers, severities; `prefix_reuse=False`), the reference with prefix reuse, the optimized path
one image at a time and `TerraVis(judge).score(images)` on the same images, checks that their
records agree, and prints the ratio of each step, each path's prefill beside its ideal, the
kernels' FLOPs, and last `prefill/ideal:` and `speedup:` (the optimized path timed on both
sides of the reference, as the host's speed drifts). Ablations run on `--ablation-images`.
bench/README.md describes every line.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

import numpy as np

from . import Measure, bench_images, build_tiny, judge_on, load_model, table
from .compute import Work, count_flops
from .ideal import IDEAL_COLUMNS, breakdown_line, measure_with_ideal, prefill_over_ideal
from .terravis_setup import (ELIGIBILITY_OPTIONS, TARGET_RATE, bench_pack, detection_margins, force_positive_rate,
                             make_all_eligible, positive_rate, record_view)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.terravis", description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=16)
    p.add_argument("--size", type=int, default=1024, help="image side in pixels")
    p.add_argument("--model", default="tiny", help="'tiny' (built here) or a checkpoint folder")
    p.add_argument("--device", default=None)
    p.add_argument("--dtype", default=None)
    p.add_argument("--batch-size", type=int, default=None, help="prompts per forward (default: the judge's)")
    p.add_argument("--yes-bias", type=float, default=None,
                   help="tiny model's yes_bias (default: calibrated for ~30%% positive checks)")
    p.add_argument("--positive-rate", type=float, default=None,
                   help="force this share of positive checks with a logit shift on Yes (random models)")
    p.add_argument("--ablation-images", type=int, default=4, help="images for the extra ablations (0: none)")
    p.add_argument("--no-reference", action="store_true", help="optimized path only (no equality check)")
    p.add_argument("--flops-images", type=int, default=None,
                   help="images whose FLOPs are counted for the reference and optimized paths, in an "
                        "untimed pass (default: all; 0: none)")
    p.add_argument("--kv-cache-mb", type=float, default=None,
                   help="budget of the judges' prefix KV store in MiB (default: the backend's; 0: off)")
    args = p.parse_args(argv)
    if args.images < 1 or args.size < 32:
        p.error("--images must be >= 1 and --size >= 32")
    if args.flops_images is not None and args.flops_images < 0:
        p.error("--flops-images must be >= 0")
    if args.positive_rate is not None and not 0 < args.positive_rate < 1:
        p.error("--positive-rate must be in (0, 1)")
    return args


# -- model and calibration --------------------------------------------------------------------
def tiny_model(images: Sequence[Any], yes_bias: float | None, device: str | None) -> tuple[Any, Any, float]:
    """The tiny checkpoint, its yes_bias calibrated on two images unless given: the margin
    moves linearly with the bias, so two builds give the bias for `TARGET_RATE`."""
    if yes_bias is None:
        probe = images[:2]
        m0 = np.array(detection_margins(*load_model(build_tiny(yes_bias=0.0), device), probe))
        m8 = np.array(detection_margins(*load_model(build_tiny(yes_bias=8.0), device), probe))
        slope = float(np.mean(m8 - m0)) / 8.0
        yes_bias = -float(np.quantile(m0, 1 - TARGET_RATE)) / slope
    model, processor = load_model(build_tiny(yes_bias=yes_bias), device)
    return model, processor, yes_bias


# -- records --------------------------------------------------------------------------------
def assert_same(name: str, records: Sequence[Any], expected: Sequence[Any]) -> None:
    """Raise, naming the path and the first image, where `records` differ from `expected`."""
    got, want = [record_view(r) for r in records], [record_view(r) for r in expected]
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            raise AssertionError(f"{name} differs from the reference on image {i}:\n{g}\n!=\n{w}")
    if len(got) != len(want):
        raise AssertionError(f"{name} gave {len(got)} records for {len(want)} images")


def expected_encodes(records: Sequence[Any], severity_sees_image: bool) -> int:
    """Images x stages that need the image: eligibility, detection (eligible images),
    evidence (images with a positive check), severity when it sees the image."""
    eligible = [r for r in records if r.checks]
    positive = [r for r in eligible if any(c.detected for c in r.checks)]
    reasons = [r for r in records if r.eligible is False and r.eligibility_parse_ok]  # reason after "No"
    return len(records) + len(reasons) + len(eligible) + len(positive) * (2 if severity_sees_image else 1)


# -- the paths --------------------------------------------------------------------------------
#: Ablations: the cross-call prefix KV store off, and that store and the vision cache both off
#: (each stage then encodes its images again: images x stages).
KV_OFF = "optimized, KV store off (subset)"
BOTH_OFF = "optimized, KV store + vision cache off (subset)"
#: The optimized path timed again after the reference (see the module doc).
AGAIN = "optimized, again after the reference"
#: Paths whose prefill is also printed per stage, beside each stage's share of the ideal.
BREAKDOWN = ("reference + prefix reuse", "optimized")


def kv_line(m: Measure) -> str:
    """The prefix KV store's counters of a path (`prefix_cache_*` of the judge's stats: units
    served, prefill tokens they skipped, entries evicted); empty where the judge keeps none."""
    found = {k: v for k, v in m.extra.get("stats", {}).items() if k.startswith("prefix_cache_")}
    names = {"hits": "units served", "tokens": "prefill tokens skipped", "evictions": "entries evicted"}
    return (f"prefix KV store ({m.name}): " + ", ".join(
        f"{names.get(k.removeprefix('prefix_cache_'), k.removeprefix('prefix_cache_'))} {v:,}"
        for k, v in found.items()) if found else "")


def compute_lines(work: dict[str, Work], counted: int, n: int, speedup: float) -> str:
    """Each path's FLOPs, their ratio and, where every image was counted, the measured
    speedup over that ratio: the optimized path's FLOP rate against the reference's."""
    ratio = work["reference"].total / work["optimized"].total
    lines = [f"FLOPs the kernels ran ({counted} image{'s' * (counted != 1)}, counted in an untimed pass):"]
    lines += [f"  {name}: {w.line()}" for name, w in work.items()]
    tail = (f"; speedup / compute ratio: {speedup / ratio:.2f} (the optimized path's FLOP rate against the "
            "reference's)" if counted == n else "")
    lines.append(f"compute ratio (reference / optimized FLOPs): {ratio:.2f}{tail}")
    return "\n".join(lines)


def run(model: Any, processor: Any, images: Sequence[Any], *, batch_size: int | None = None,
        ablation_images: int = 4, reference: bool = True, steps: bool = True, header: Sequence[str] = (),
        kv_cache_mb: float | None = None, flops_images: int | None = 0, out=sys.stdout) -> dict[str, Measure]:
    """Time every path on `images`; check their records agree; print the table and ratios.
    `kv_cache_mb` sizes the prefix KV store of the judges that keep one (None: the default);
    `flops_images` images (None: all) get their reference and optimized FLOPs counted
    (`bench.compute`, an untimed pass), printed with their ratio, the compute bound of the speedup."""
    import torch

    from terravis import TerraVis
    from terravis.core import make_items
    from terravis.workflow import WorkflowConfig, reference_records
    cuda = next(model.parameters()).device.type == "cuda"
    pack = bench_pack()
    n = len(images)
    opt_kw = {} if batch_size is None else {"batch_size": batch_size}
    if kv_cache_mb is not None:
        opt_kw["kv_cache_mb"] = kv_cache_mb

    def optimized(judge, imgs, **tv):
        return TerraVis(judge, pack=pack, **tv).score(imgs)

    def per_image(judge, imgs):
        return [r for k, im in enumerate(imgs) for r in TerraVis(judge, pack=pack).score([im], ids=[str(k)])]

    def ref(judge, imgs):
        return reference_records(judge, make_items(imgs), pack, WorkflowConfig())

    def ref_judge_on(**kw):  # the release's pattern: whole prompts, its 18 questions per batch
        return judge_on(model, processor, prefix_reuse=False, batch_size=18, **kw)

    # warm-up on one small image: grammar compilation and first-call costs stay out of the timings
    small = bench_images(1, 64, seed=99)
    ref(ref_judge_on(), small)
    optimized(judge_on(model, processor, **opt_kw), small)

    ref_judge = ref_judge_on(prefetch=False)
    reuse_judge, one_judge, opt_judge = (judge_on(model, processor, **opt_kw) for _ in range(3))
    results: dict[str, tuple[Measure, list]] = {}
    plan = [("optimized", opt_judge, lambda: optimized(opt_judge, images))]
    if steps:  # the intermediate paths whose ratios split the speedup
        plan += [("optimized, one image at a time", one_judge, lambda: per_image(one_judge, images)),
                 ("reference + prefix reuse", reuse_judge, lambda: ref(reuse_judge, images))]
    if reference:
        again_judge = judge_on(model, processor, **opt_kw)
        plan += [("reference", ref_judge, lambda: ref(ref_judge, images)),
                 (AGAIN, again_judge, lambda: optimized(again_judge, images))]
    for name, judge, fn in plan:
        results[name] = measure_with_ideal(name, n, [judge], fn, cuda, stages=name in BREAKDOWN)
    base = results["reference"][1] if reference else results["optimized"][1]
    for name, (_, records) in results.items():
        assert_same(name, records, base)

    sub = images[:min(ablation_images, n)]
    ablations: dict[str, tuple[Measure, list]] = {}
    if sub:
        judges = {"optimized (subset)": judge_on(model, processor, **opt_kw),
                  "optimized, prefix reuse off (subset)": judge_on(model, processor, prefix_reuse=False, **opt_kw),
                  KV_OFF: judge_on(model, processor, **{**opt_kw, "kv_cache_mb": 0}),
                  BOTH_OFF: judge_on(model, processor, vision_cache_mb=0, **{**opt_kw, "kv_cache_mb": 0}),
                  "optimized, decisions generated (subset)": judge_on(model, processor, **opt_kw)}
        calls = {name: (lambda j: optimized(j, sub)) for name in judges}
        calls["optimized, decisions generated (subset)"] = lambda j: optimized(j, sub, decision="generate")
        for name, judge in judges.items():
            ablations[name] = measure_with_ideal(name, len(sub), [judge], lambda: calls[name](judge), cuda)
        for name, (_, records) in ablations.items():
            assert_same(name, records, base[:len(sub)])

    counted = (images if flops_images is None else images[:flops_images]) if reference else []
    work: dict[str, Work] = {}
    if counted:
        for name, judge, fn in [("reference", ref_judge_on(prefetch=False), ref),
                                ("optimized", judge_on(model, processor, **opt_kw), optimized)]:
            records, work[name] = count_flops(lambda: fn(judge, counted))
            assert_same(f"{name} (FLOPs counted)", records, base[:len(counted)])

    opt_m, opt_records = results["optimized"]
    stage_encodes = expected_encodes(opt_records, pack.severity_sees_image)
    once = n if opt_judge.vision_cache.enabled else stage_encodes  # eligibility sees every image
    if opt_m.images_encoded != once:
        raise AssertionError(f"optimized path encoded {opt_m.images_encoded} images, not {once}")
    if BOTH_OFF in ablations:
        off, off_records = ablations[BOTH_OFF]
        if off.images_encoded != expected_encodes(off_records, pack.severity_sees_image):
            raise AssertionError(f"with the vision cache and the prefix KV store off, {off.images_encoded} images "
                                 "were encoded, not images x stages that need the image")
    rate = positive_rate(opt_records)
    measures = [m for m, _ in results.values()] + [m for m, _ in ablations.values()]
    rates = {m.name: positive_rate(r) for m, r in list(results.values()) + list(ablations.values())}
    for line in header:  # only now: nothing is printed before the records agree
        print(line, file=out)
    print(f"model: {type(model).__name__}, {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters, "
          f"device {next(model.parameters()).device}, torch threads {torch.get_num_threads()}", file=out)
    print(f"images: {n} at {images[0].width}x{images[0].height}; eligible: "
          f"{sum(bool(r.checks) for r in opt_records)}; positive rate of the checks: {rate:.3f}", file=out)
    print(table(measures, [*IDEAL_COLUMNS, ("positive rate", lambda m: f"{rates[m.name]:.3f}")]), file=out)
    print(f"images encoded (optimized): {opt_m.images_encoded}: each image once "
          f"(images x stages that need the image: {stage_encodes}; the vision cache serves the later stages)"
          if opt_judge.vision_cache.enabled else
          f"images encoded (optimized): {opt_m.images_encoded} = images x stages that need the image", file=out)

    def ratio(a: str, b: str, pool=results) -> float:
        return pool[b][0].images_per_s / pool[a][0].images_per_s

    if reference and steps:
        print(f"prefix reuse: {ratio('reference', 'reference + prefix reuse'):.2f}x", file=out)
    if steps:
        print(f"one-token decisions: {ratio('reference + prefix reuse', 'optimized, one image at a time'):.2f}x",
              file=out)
        print(f"cross-image batching: {ratio('optimized, one image at a time', 'optimized'):.2f}x", file=out)
    if ablations:
        print(f"prefix reuse within the optimized path (subset): "
              f"{ratio('optimized, prefix reuse off (subset)', 'optimized (subset)', ablations):.2f}x", file=out)
        print(f"prefix KV store within the optimized path (subset): "
              f"{ratio(KV_OFF, 'optimized (subset)', ablations):.2f}x", file=out)
        print(f"vision cache without the KV store (subset): {ratio(BOTH_OFF, KV_OFF, ablations):.2f}x", file=out)
        print(f"read vs generated one-token decisions (subset): "
              f"{ratio('optimized, decisions generated (subset)', 'optimized (subset)', ablations):.2f}x", file=out)
    for name in BREAKDOWN:
        if name in results:
            print(breakdown_line(name, results[name][0].extra["stages"]), file=out)
    kv = kv_line(opt_m)
    if kv:
        print(kv, file=out)
    speedup = 0.0
    if reference:
        ref_s, before_s, after_s = (results[k][0].seconds for k in ("reference", "optimized", AGAIN))
        speedup = ref_s / ((before_s + after_s) / 2)
        print(f"optimized before / after the reference: {before_s:.1f} s / {after_s:.1f} s, a speedup of "
              f"{ref_s / before_s:.2f} / {ref_s / after_s:.2f}; the speedup below is the reference's time over "
              "their mean", file=out)
    if work:
        print(compute_lines(work, len(counted), n, speedup), file=out)
    print(f"prefill/ideal: {prefill_over_ideal(opt_m):.3f}", file=out)
    if reference:
        print(f"speedup: {speedup:.2f}", file=out)
    return {name: m for name, (m, _) in {**results, **ablations}.items()}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    images = bench_images(args.images, args.size)
    header = [f"pack: the default prompts, eligibility answered {'/'.join(ELIGIBILITY_OPTIONS)} "
              f"(forced to {ELIGIBILITY_OPTIONS[0]}: every image runs every stage)"]
    if args.model == "tiny":
        model, processor, bias = tiny_model(images, args.yes_bias, args.device)
        header.append(f"tiny Qwen3-VL with realistic visual tokens, yes_bias {bias:.3f}")
    else:
        model, processor = load_model(args.model, args.device, args.dtype)
    make_all_eligible(model, processor)
    if args.positive_rate is not None:
        shift = force_positive_rate(model, processor, images, args.positive_rate)
        header.append(f"Yes logits shifted by {shift.shift:+.4f} for a positive rate near {args.positive_rate}")
    run(model, processor, images, batch_size=args.batch_size, ablation_images=args.ablation_images,
        reference=not args.no_reference, header=header, kv_cache_mb=args.kv_cache_mb,
        flops_images=args.flops_images)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
