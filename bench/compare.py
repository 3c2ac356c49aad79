"""Statistics at scale: `vlmjudge compare` on two TerraVis runs of 100k images at 2,000 resamples
(the headline and 23 breakdown statistics: 21 violation shares, 2 styles), and `vlmjudge agreement` on 10k
items at 200 resamples, each timed in a process of its own: wall and CPU seconds, peak memory.

    python -m bench.compare --items 100000 --resamples 2000 --agreement-items 10000
    python -m bench.compare --items 50000 --items 100000   # memory against items: linear

The runs are written as TerraVis writes them (`ImageRecord.to_json`: every check of the taxonomy,
about 5.5 KB a record). The agreement run's scores are continuous, none shared (the worst case of
tie-calibrated pairwise accuracy: one class per item), against 1-5 ratings. The goal (issue 50):
compare under 60 s on 2 cores, memory linear in the items; agreement far under 213 s and 3.5 GB.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from . import grid


def terravis_records(n: int, seed: int, positive_rate: float) -> list[dict]:
    """`n` TerraVis records as its scoring command writes them; about 3% of the images N/A."""
    from terravis.records import CheckRecord, ImageRecord
    from terravis.scoring import score_from_counts
    from terravis.taxonomy import TYPE_IDS

    rng = random.Random(seed)
    clean = {t: CheckRecord(t, detected=False, prob=0.1).to_json() for t in TYPE_IDS}
    found = {(t, s): CheckRecord(t, detected=True, prob=0.9, evidence="The cup floats above the table.",
                                 evidence_parse_ok=True, severity=s, severity_prob=0.8,
                                 severity_parse_ok=True).to_json()
             for t in TYPE_IDS for s in ("major", "minor")}
    template = ImageRecord("x.png", score=1.0, eligible=True, eligibility_prob=0.93).to_json()
    out = []
    for k in range(n):
        if rng.random() < 0.03:
            out.append({**template, "id": f"gen/{k:06d}.png", "status": "not_applicable", "score": None,
                        "eligible": False, "valid": False, "meta": {"style": "stylized"}})
            continue
        checks, counts = [], {"major": 0, "minor": 0}
        for t in TYPE_IDS:
            if rng.random() < positive_rate:
                severity = "major" if rng.random() < 0.4 else "minor"
                counts[severity] += 1
                checks.append(dict(found[t, severity], prob=round(rng.random(), 6)))
            else:
                checks.append(dict(clean[t], prob=round(rng.random() / 2, 6)))
        out.append({**template, "id": f"gen/{k:06d}.png", "score": score_from_counts(counts["major"], counts["minor"]),
                    "checks": checks, "n_major": counts["major"], "n_minor": counts["minor"],
                    "meta": {"style": rng.choice(("photorealistic", "stylized"))}})
    return out


def write_run(path: Path, records: list[dict], manifest: dict) -> str:
    """Records and manifest, through the writers every scoring command uses."""
    from vlmjudge.outputs import write_manifest, write_records

    write_records(path, records)
    write_manifest(path, manifest)
    return str(path)


#: The timed process: the command, then its own memory high-water mark (VmHWM counts only what the
#: process held after exec; `ru_maxrss` would also count the bench's own memory, copied at fork).
_CHILD = """import sys
from vlmjudge.cli import main
code = main(sys.argv[1:])
try:
    peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
except OSError:
    peak = ""
print(f"peak-kb {peak}", file=sys.stderr)
sys.exit(code)
"""


def timed(argv: list[str]) -> dict:
    """Run `vlmjudge ARGV` in a process of its own: wall and CPU seconds, peak memory."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", _CHILD, *argv], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    errors = process.stderr.read() if process.stderr else ""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"vlmjudge {argv[0]} failed: {errors.strip()}")
    peak_kb = next((line.split()[1] for line in errors.splitlines()[::-1] if line.startswith("peak-kb ")), "")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mb": int(peak_kb) / 1024 if peak_kb.isdigit() else usage.ru_maxrss / 1024}


def bench_compare(folder: Path, items: int, resamples: int) -> dict:
    """Two TerraVis runs of `items` images (b finds a few more violations), compared."""
    manifest = {"method": "terravis", "model": "bench/judge", "method_version": "bench"}
    a = write_run(folder / f"a{items}" / "records.jsonl", terravis_records(items, 1, 0.08), manifest)
    b = write_run(folder / f"b{items}" / "records.jsonl", terravis_records(items, 2, 0.09), manifest)
    used = timed(["compare", a, b, "--out", str(folder / f"comparison{items}"), "--resamples", str(resamples)])
    result = json.loads((folder / f"comparison{items}" / "comparison.json").read_text(encoding="utf-8"))
    breakdown = sum(len(group) for group in result["breakdown"].values())
    return {**used, "what": f"compare {items:,} x 2 runs, {resamples:,} resamples ({breakdown} breakdown statistics)"}


def bench_agreement(folder: Path, items: int, resamples: int) -> dict:
    """A run of `items` continuous scores against 1-5 ratings that follow them loosely."""
    rng = random.Random(3)
    scores = [rng.random() for _ in range(items)]
    records = [{"id": f"img/{k:05d}.png", "status": "scored", "score": s} for k, s in enumerate(scores)]
    run = write_run(folder / "agreement" / "run.jsonl", records, {"model": "bench/judge"})
    labels = folder / "agreement" / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": r["id"], "human": min(5, max(1, round(1 + 4 * r["score"] +
                                                                                  rng.gauss(0, 1))))}) + "\n"
                              for r in records), encoding="utf-8")
    used = timed(["agreement", run, str(labels), "--out", str(folder / "agreement" / "out"),
                  "--resamples", str(resamples)])
    return {**used, "what": f"agreement {items:,} items, {resamples:,} resamples"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, action="append", help="images per compare run (repeatable; "
                                                                     "default 100000)")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--agreement-items", type=int, default=10_000, help="0: no agreement run")
    parser.add_argument("--agreement-resamples", type=int, default=200)
    parser.add_argument("--folder", default=None, help="where the runs go (default: a temporary folder)")
    args = parser.parse_args(argv)
    folder = Path(args.folder or tempfile.mkdtemp(prefix="vlmjudge-bench-compare-"))
    rows = [bench_compare(folder, items, args.resamples) for items in (args.items or [100_000])]
    if args.agreement_items:
        rows.append(bench_agreement(folder, args.agreement_items, args.agreement_resamples))
    print(grid(["what", "wall s", "CPU s", "peak MB"],
               [[r["what"], f"{r['wall_s']:.1f}", f"{r['cpu_s']:.1f}", f"{r['peak_mb']:.0f}"] for r in rows]))
    threads = {name: os.environ[name] for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS") if name in os.environ}
    print(f"load average at the end (1 min): {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; BLAS threads: "
          f"{threads or 'as the library chooses'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
