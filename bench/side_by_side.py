"""One TerraVis run per backend, side by side on one checkpoint and the same images.

    python -m bench.side_by_side --backends transformers,vllm,vllm-serve --images 8 --size 256

Why: which engine serves the suite fastest is a question of measured rates on the same model,
images and prompts. Each backend scores the same images with `TerraVis(judge).score` after a
one-image warm-up; the table gives images/s, seconds, prompt and prefill tokens and the prefix
cache's hits, with ratios against the first backend measured; records are compared with the
first backend's (floats within `TOLERANCE`). A backend that cannot run here is listed as skipped.
A checkpoint built here has its eligibility answer and its share of positive checks set in its
weights, as other processes (engines, servers) see no forward hook.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from . import bench_images, grid, judge_on, load_model, option_token_ids
from .backends import NAMES, Unavailable, describe, free_memory, on_cuda, opened, parse_backends
from .random_vlm import CONFIGS, build_random_qwen3vl, processor_with_realistic_tokens
from .terravis_setup import ELIGIBILITY_OPTIONS, TARGET_RATE, bench_pack, positive_rate, record_view

#: Largest difference between two records' floats that still counts as equal.
TOLERANCE = 1e-4
#: Smallest log-odds of the first eligibility option a built checkpoint gets on every image.
ELIGIBLE_MARGIN = 30.0
#: Residual dimension a built checkpoint holds constant, read by the LM head for shifted tokens.
HELD_DIM = 0


@dataclass
class Row:
    """One backend's timed run: seconds, images, prompt tokens looked up in its prefix cache,
    those the cache served, and tokens generated."""

    name: str
    seconds: float
    images: int
    prompt_tokens: int
    cached_tokens: int
    generated_tokens: int

    @property
    def images_per_s(self) -> float:
        return self.images / self.seconds

    @property
    def prefill_tokens(self) -> int:
        return self.prompt_tokens - self.cached_tokens

    @property
    def hit_rate(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


# -- the checkpoint ----------------------------------------------------------------------------
def hold_dimension(model: Any) -> None:
    """Hold residual dimension `HELD_DIM` at 1 for every text token (nothing writes into it) and
    let no LM-head row read it yet; `shift_tokens` then moves chosen tokens' logits by a multiple
    of that constant, in the weights."""
    import torch
    lm = model.model.language_model
    with torch.no_grad():
        lm.embed_tokens.weight[:, HELD_DIM] = 1.0
        for layer in lm.layers:
            layer.self_attn.o_proj.weight[HELD_DIM, :] = 0.0
            layer.mlp.down_proj.weight[HELD_DIM, :] = 0.0
        model.lm_head.weight[:, HELD_DIM] = 0.0


def shift_tokens(model: Any, token_ids: Sequence[int], weight: float) -> None:
    """Set the LM-head weight with which `token_ids` read the held dimension."""
    import torch
    with torch.no_grad():
        model.lm_head.weight[list(token_ids), HELD_DIM] = weight


def _margins(model: Any, processor: Any, requests: Sequence[Any], options: Sequence[str]) -> np.ndarray:
    """log P(first option) / P(second) per request, on a fresh judge (no stale caches)."""
    probs = judge_on(model, processor).choice_probs(list(requests), list(options))
    return np.array([math.log(p[options[0]] / p[options[1]]) for p in probs])


def _slopes(model: Any, processor: Any, ids: Sequence[int], requests: Sequence[Any],
            options: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Margins at weight 0 and their change per unit weight (the logit moves linearly with it)."""
    shift_tokens(model, ids, 0.0)
    m0 = _margins(model, processor, requests, options)
    shift_tokens(model, ids, 1.0)
    slope = _margins(model, processor, requests, options) - m0
    if (slope <= 0).any():
        raise RuntimeError("the held dimension does not raise these tokens' logits on every prompt")
    return m0, slope


def set_decisions(model: Any, processor: Any, images: Sequence[Any], positive_rate: float) -> tuple[float, float]:
    """Weights that make every image eligible and about `positive_rate` of the detection checks
    on two images positive; returns (eligibility weight, Yes weight)."""
    from terravis import asking
    from terravis.taxonomy import TAXONOMY
    pack, tok = bench_pack(), processor.tokenizer
    hold_dimension(model)
    eligible_ids = option_token_ids(tok, ELIGIBILITY_OPTIONS[0])
    m0, slope = _slopes(model, processor, eligible_ids,
                        [asking.eligibility_request(pack, im, str(i)) for i, im in enumerate(images)],
                        ELIGIBILITY_OPTIONS)
    eligible_w = max(0.0, float(np.max((ELIGIBLE_MARGIN - m0) / slope)))
    shift_tokens(model, eligible_ids, eligible_w)
    yes_ids = option_token_ids(tok, "Yes")
    detection = [asking.detection_request(pack, im, str(i), v) for i, im in enumerate(images[:2]) for v in TAXONOMY]
    m0, slope = _slopes(model, processor, yes_ids, detection, pack.options.detection)
    yes_w = float(np.quantile(-m0 / slope, positive_rate))  # check i is positive once the weight passes -m0/slope
    shift_tokens(model, yes_ids, yes_w)
    return eligible_w, yes_w


def build_checkpoint(kind: str, images: Sequence[Any], positive_rate: float, device: str | None,
                     dtype: str) -> tuple[str, str]:
    """A vLLM-compatible Qwen3-VL folder ("tiny", or "random:<config>" of `bench.random_vlm`)
    with its decisions set in its weights; (folder, a line that says what it is)."""
    import torch

    from vlmjudge.testing import build_tiny_vlm
    folder = tempfile.mkdtemp(prefix="vlmjudge-bench-ckpt-")
    if kind == "tiny":
        build_tiny_vlm(folder + "/build", image_tokens="realistic", vllm=True)
        model, processor = load_model(folder + "/build", device, dtype)
        what = "tiny Qwen3-VL (vLLM head size) with realistic visual tokens"
    else:
        config = kind.removeprefix("random:")
        if config not in CONFIGS:
            raise ValueError(f"--model {kind!r}: random configurations are {', '.join(sorted(CONFIGS))}")
        processor = processor_with_realistic_tokens()
        model = build_random_qwen3vl(config, processor, device or "cpu", getattr(torch, dtype))
        what = f"random-weight Qwen3-VL {config} ({sum(p.numel() for p in model.parameters()) / 1e6:,.1f} M parameters)"
    eligible_w, yes_w = set_decisions(model, processor, images, positive_rate)
    model.save_pretrained(folder + "/model")
    processor.save_pretrained(folder + "/model")
    del model, processor
    free_memory()
    return folder + "/model", (f"{what}; weights set: eligibility {eligible_w:+.3f}, Yes {yes_w:+.3f} "
                               f"(all eligible, ~{positive_rate:.0%} positive checks)")


# -- the runs --------------------------------------------------------------------------------
def time_backend(name: str, checkpoint: str, images: Sequence[Any], dtype: str,
                 device: str | None) -> tuple[Row, list, str]:
    """Warm `name` up on one small image, then time TerraVis on `images`: (row, records, where
    its cache counters come from)."""
    from terravis import TerraVis
    pack = bench_pack()
    with opened(name, checkpoint, dtype, device) as o:
        TerraVis(o.judge, pack=pack).score(bench_images(1, 64, seed=99))
        before, generated = o.counters(), o.judge.stats.generated_tokens
        start = time.perf_counter()
        records = TerraVis(o.judge, pack=pack).score(list(images))
        seconds = time.perf_counter() - start
        after = o.counters()
        row = Row(name, seconds, len(images), after[0] - before[0], after[1] - before[1],
                  o.judge.stats.generated_tokens - generated)
        return row, records, o.source


def record_values(record: Any) -> dict[str, Any]:
    """What two backends must agree on: decisions, texts, scores and the checks' probabilities."""
    return {**record_view(record), "probs": [(c.prob, c.severity_prob) for c in record.checks]}


def first_difference(a: Any, b: Any, tol: float = TOLERANCE) -> str | None:
    """None when `a` equals `b` (floats within `tol`), else where they first differ.

    >>> first_difference({"x": [1.0, "a"]}, {"x": [1.00001, "a"]}) is None, first_difference([0.5], [0.6])
    (True, '[0]: 0.5 != 0.6')
    """
    if isinstance(a, float) and isinstance(b, float):
        return None if abs(a - b) <= tol else f"{a!r} != {b!r}"
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for key in a:
            found = first_difference(a[key], b[key], tol)
            if found is not None:
                return f"{key}{'' if found.startswith('[') else ': '}{found}"
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, tol)
            if found is not None:
                return f"[{i}]{'' if found.startswith('[') else ': '}{found}"
        return None
    return None if a == b else f"{a!r} != {b!r}"


def compare_records(records: Sequence[Any], expected: Sequence[Any]) -> str:
    """'equal', or the first image where they differ and how."""
    if len(records) != len(expected):
        return f"differ: {len(records)} records for {len(expected)}"
    for i, (r, e) in enumerate(zip(records, expected)):
        found = first_difference(record_values(r), record_values(e))
        if found is not None:
            return f"differ on image {i}: {found[:300]}"
    return "equal"


def backend_table(rows: Sequence[Row]) -> str:
    """One line per backend; the ratio columns are against the first row."""
    first = rows[0]
    header = ["backend", "images/s", "seconds", "prompt tokens", "prefill tokens", "cache hit tokens",
              "hit rate", "generated", f"images/s vs {first.name}", f"prefill vs {first.name}"]
    body = [[r.name, f"{r.images_per_s:.3f}", f"{r.seconds:.1f}", f"{r.prompt_tokens:,}", f"{r.prefill_tokens:,}",
             f"{r.cached_tokens:,}", f"{r.hit_rate:.3f}", f"{r.generated_tokens:,}",
             f"{r.images_per_s / first.images_per_s:.2f}x",
             f"{r.prefill_tokens / first.prefill_tokens:.2f}x" if first.prefill_tokens else "-"] for r in rows]
    return grid(header, body)


def run_backends(names: Sequence[str], checkpoint: str, images: Sequence[Any], *, dtype: str,
                 device: str | None, header: Sequence[str] = (), out=sys.stdout) -> dict[str, Row]:
    """Time each backend in turn and print the table, the records' agreement and what was skipped."""
    rows: dict[str, Row] = {}
    records: dict[str, list] = {}
    sources: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for name in names:
        try:
            rows[name], records[name], sources[name] = time_backend(name, checkpoint, images, dtype, device)
        except Unavailable as exc:
            skipped[name] = describe(exc)
        free_memory()
        print(f"... {name}: " + (f"{rows[name].seconds:.1f} s" if name in rows else "skipped"), file=sys.stderr)
    for line in header:
        print(line, file=out)
    print(f"images: {len(images)} at {images[0].width}x{images[0].height}; dtype {dtype}; "
          f"device {device or ('cuda' if on_cuda() else 'cpu')}", file=out)
    if rows:
        print(backend_table(list(rows.values())), file=out)
        first = next(iter(rows))
        print(f"records of {first}: eligible {sum(bool(r.checks) for r in records[first])} of {len(images)}, "
              f"positive rate of the checks {positive_rate(records[first]):.3f}", file=out)
        for name in list(rows)[1:]:
            print(f"records of {name} against {first} (floats within {TOLERANCE:g}): "
                  f"{compare_records(records[name], records[first])}", file=out)
        for name, source in sources.items():
            print(f"cache counters of {name}: {source}", file=out)
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}", file=out)
    return rows


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.side_by_side", description=__doc__.splitlines()[0])
    p.add_argument("--backends", default=",".join(NAMES),
                   help=f"comma-separated, from {', '.join(NAMES)} (default: all; one that cannot run is skipped)")
    p.add_argument("--images", type=int, default=16)
    p.add_argument("--size", type=int, default=1024, help="image side in pixels")
    p.add_argument("--model", default="tiny",
                   help="'tiny' (built here), 'random:<config>' of bench.random_vlm, or a checkpoint folder")
    p.add_argument("--device", default=None)
    p.add_argument("--dtype", default=None)
    p.add_argument("--positive-rate", type=float, default=TARGET_RATE,
                   help="share of positive checks a built checkpoint's weights are set for (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        args.backends = parse_backends(args.backends)
    except ValueError as exc:
        p.error(str(exc))
    if args.model.startswith("random:") and args.model.removeprefix("random:") not in CONFIGS:
        p.error(f"--model {args.model!r}: random configurations are {', '.join(sorted(CONFIGS))}")
    if args.images < 1 or args.size < 32:
        p.error("--images must be >= 1 and --size >= 32")
    if not 0 < args.positive_rate < 1:
        p.error("--positive-rate must be in (0, 1)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Build or take the checkpoint, then `run_backends`."""
    args = parse_args(argv)
    names = args.backends
    device = args.device or ("cuda" if on_cuda() else "cpu")
    dtype = args.dtype or ("bfloat16" if device.startswith("cuda") else "float32")
    images = bench_images(args.images, args.size)
    header = [f"backends side by side: {', '.join(names)} (TerraVis(judge).score after a one-image warm-up)"]
    if args.model == "tiny" or args.model.startswith("random:"):
        checkpoint, what = build_checkpoint(args.model, images, args.positive_rate, device, dtype)
        header.append(what)
    else:
        checkpoint = args.model
        header.append(f"checkpoint {checkpoint}")
    run_backends(names, checkpoint, images, dtype=dtype, device=device, header=header)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
