"""One TerraVis run per backend, side by side on one checkpoint and the same images.

    python -m bench.side_by_side --backends transformers,vllm,vllm-serve --images 8 --size 256
    python -m bench.terravis --backends transformers,vllm,vllm-serve --images 16 --size 1024   (the same)

Why: which engine serves the suite fastest is a question of measured rates on the same model,
images and prompts. Each backend scores the same images with `TerraVis(judge).score` after a
one-image warm-up; the tables give images/s, seconds, prompt, prefill and generated tokens, the
prefix cache's hits and where the time went (`bench.phases`), with ratios against the first
backend; then the schedulers' queues, how images reached the server, the host's load around each
run (`bench.host_load`, with a warning where it was loaded), the records compared with the first
backend's (floats within `TOLERANCE`) and issue 51's targets. A backend that cannot run is skipped.
"""
from __future__ import annotations

import argparse
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Sequence

from . import bench_images, grid
from .backends import NAMES, Unavailable, describe, free_memory, on_cuda, opened, parse_backends
from .decided_checkpoint import build_checkpoint
from .host_load import HostLoad, LoadWatch
from .phases import Phases, engine_phases, phase_table, torch_phases
from .prometheus import QueueSampler, difference
from .random_vlm import CONFIGS
from .terravis_setup import TARGET_RATE, bench_pack, positive_rate, record_view

#: Largest difference between two records' floats that still counts as equal.
TOLERANCE = 1e-4
#: Issue 51's targets: (numerator backend, denominator backend, what, largest ratio).
TARGETS = (("vllm-serve", "vllm", "seconds", 1.5), ("vllm-serve", "vllm", "prompt tokens", 1.05),
           ("transformers", "vllm", "seconds", 1.5))


@dataclass
class Row:
    """One backend's timed run: seconds, images, prompt tokens looked up in its prefix cache,
    those the cache served, tokens generated; where the time went, the host's load, the
    scheduler's queues and notes (how images went to a server)."""

    name: str
    seconds: float
    images: int
    prompt_tokens: int
    cached_tokens: int
    generated_tokens: int
    phases: Phases | None = None
    load: HostLoad | None = None
    queues: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def images_per_s(self) -> float:
        return self.images / self.seconds

    @property
    def prefill_tokens(self) -> int:
        return self.prompt_tokens - self.cached_tokens

    @property
    def hit_rate(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def time_backend(name: str, checkpoint: str, images: Sequence[Any], dtype: str,
                 device: str | None) -> tuple[Row, list, str]:
    """Warm `name` up on one small image, then time TerraVis on `images` while its phases, queues
    and the host's load are read: (row, records, where its cache counters come from)."""
    from terravis import TerraVis
    pack = bench_pack()
    with opened(name, checkpoint, dtype, device) as o:
        judge = o.judge
        TerraVis(judge, pack=pack).score(bench_images(1, 64, seed=99))
        before, generated = o.counters(), judge.stats.generated_tokens
        metrics = o.metrics() if o.metrics else {}
        client = o.client_seconds() if o.client_seconds else None
        timer = torch_phases(judge.model) if name == "transformers" else nullcontext()
        sampler = QueueSampler(o.metrics) if o.metrics else nullcontext()
        with LoadWatch() as watch, sampler as queues, timer as measured:
            start = time.perf_counter()
            records = TerraVis(judge, pack=pack).score(list(images))
            seconds = time.perf_counter() - start
        after = o.counters()
        row = Row(name, seconds, len(images), after[0] - before[0], after[1] - before[1],
                  judge.stats.generated_tokens - generated, measured, watch.load,
                  queues.line() if queues is not None else None)
        if o.metrics:
            run = difference(o.metrics(), metrics)
            row.phases = engine_phases(run, o.client_seconds() - client if client is not None else None)
            row.notes.append(f"the engine counted {run.get('vllm:prompt_tokens', 0):,.0f} prompt tokens, "
                             f"{run.get('vllm:generation_tokens', 0):,.0f} generated; multimodal cache: "
                             f"{run.get('vllm:mm_cache_hits', 0):,.0f} hits of {run.get('vllm:mm_cache_queries', 0):,.0f}")
        manifest = judge.manifest()
        if "images" in manifest:
            row.notes.append(f"images sent: {manifest['images']}; options read by token id: "
                             f"{manifest['options_by_token_id']}")
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


def target_lines(rows: dict[str, Row], records_equal: bool) -> list[str]:
    """Issue 51's targets that these rows can check, each with its ratio and whether it is met.

    >>> rows = {"vllm": Row("vllm", 10.0, 4, 1000, 0, 5), "vllm-serve": Row("vllm-serve", 12.0, 4, 1040, 0, 5)}
    >>> target_lines(rows, True)
    ['target vllm-serve / vllm seconds: 1.20 (at most 1.5: met)', 'target vllm-serve / vllm prompt tokens: 1.04 (at most 1.05: met)', 'records equal on every backend: yes']
    """
    lines = []
    for top, bottom, what, limit in TARGETS:
        if top in rows and bottom in rows:
            a, b = rows[top], rows[bottom]
            ratio = a.seconds / b.seconds if what == "seconds" else a.prompt_tokens / max(b.prompt_tokens, 1)
            lines.append(f"target {top} / {bottom} {what}: {ratio:.2f} (at most {limit}: "
                         f"{'met' if ratio <= limit else 'NOT met'})")
    return lines + [f"records equal on every backend: {'yes' if records_equal else 'NO'}"]


def run_backends(names: Sequence[str], checkpoint: str, images: Sequence[Any], *, dtype: str,
                 device: str | None, header: Sequence[str] = (), out=sys.stdout) -> dict[str, Row]:
    """Time each backend in turn and print the tables, the records' agreement, the load each ran
    under, what was skipped and the targets."""
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
    equal = True
    if rows:
        print(backend_table(list(rows.values())), file=out)
        print("where the time went (seconds; '-': not reported by that backend):", file=out)
        print(phase_table({n: (r.seconds, r.phases) for n, r in rows.items() if r.phases is not None}), file=out)
        for name, row in rows.items():
            lines = [f"phases of {name}: {row.phases.source}" if row.phases else None,
                     f"scheduler queues of {name} (sampled): {row.queues}" if row.queues else None,
                     *(f"{name}: {note}" for note in row.notes), row.load.line(name) if row.load else None,
                     row.load.cpu_line(name) if row.load else None]
            for line in filter(None, lines):
                print(line, file=out)
            if row.load is not None and row.load.loaded():
                print(f"warning: the host was loaded while {name} ran; its figures are not a quiet machine's",
                      file=out)
        first = next(iter(rows))
        print(f"records of {first}: eligible {sum(bool(r.checks) for r in records[first])} of {len(images)}, "
              f"positive rate of the checks {positive_rate(records[first]):.3f}", file=out)
        for name in list(rows)[1:]:
            verdict = compare_records(records[name], records[first])
            equal = equal and verdict == "equal"
            print(f"records of {name} against {first} (floats within {TOLERANCE:g}): {verdict}", file=out)
        for name, source in sources.items():
            print(f"cache counters of {name}: {source}", file=out)
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}", file=out)
    if rows:
        for line in target_lines(rows, equal):
            print(line, file=out)
    return rows


def parse_args(argv: Sequence[str] | None = None, prog: str = "python -m bench.side_by_side") -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
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


def main(argv: Sequence[str] | None = None, prog: str = "python -m bench.side_by_side") -> int:
    """Build or take the checkpoint, then `run_backends`."""
    args = parse_args(argv, prog)
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
