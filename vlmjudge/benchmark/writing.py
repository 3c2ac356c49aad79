"""What a benchmark writes in its --out folder: one run per model and method in the layout of every
scoring command (`runs/<model>/<method>/records.jsonl`, its manifest and failures beside it), so
`vlmjudge compare` and `vlmjudge agreement` read each unchanged, and `benchmark.json`, which says
what was benchmarked: the suite, the models, the methods and their options, the judge.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..cli.exits import failures_path
from ..cli.intake import Failure
from ..outputs import json_text, write_manifest, write_records, write_text_whole
from .judging import COUNTERS, ModelItems, ShardResult
from .methods import MethodPlan
from .suites import PromptSuite

#: The benchmark's manifest at the top of --out.
BENCHMARK_MANIFEST = "benchmark.json"
#: The command every run's manifest names.
COMMAND = "vlmjudge benchmark"


def run_path(out: Path, model: str, method: str) -> Path:
    """Where a model's run of one method goes: OUT/runs/<model>/<method>/records.jsonl."""
    return out / "runs" / model / method / "records.jsonl"


def run_failures(items: ModelItems, merged: ShardResult, method: str) -> list[dict[str, Any]]:
    """A run's images without a result: the model's bad images, then this method's failed records."""
    bad = [asdict(failure) for failure in items.failures] + merged.failures.get(items.name, {}).get("*", [])
    return sorted(bad, key=lambda f: f["index"]) + merged.failures.get(items.name, {}).get(method, [])


def write_failures(path: Path, failures: Sequence[Mapping[str, Any]]) -> None:
    """`<records>.failures.jsonl` beside a run, as every scoring command writes it (removed when none)."""
    target = failures_path(path)
    if not failures:
        target.unlink(missing_ok=True)
        return
    write_text_whole(target, "".join(json_text(dict(f), str(target)) + "\n" for f in failures))


def write_runs(out: Path, suite: PromptSuite, models: Sequence[ModelItems], plans: Sequence[MethodPlan],
               merged: ShardResult, manifests: Mapping[str, Mapping[str, Any]], context: Mapping[str, Any]
               ) -> dict[str, dict[str, Path]]:
    """Write every run (records in suite order, manifest, failures); returns {model: {method: path}}.
    `manifests` holds what judged each method (its own manifest, else its judge's); `context`
    the settings every run shares (cache, processes). A manifest's `image_paths` leads from each
    record id to its image, for a report's thumbnails."""
    runs: dict[str, dict[str, Path]] = {}
    for items in models:
        for plan in plans:
            path = run_path(out, items.name, plan.name)
            records = [record for _, record in merged.records.get(items.name, {}).get(plan.name, [])]
            failures = run_failures(items, merged, plan.name)
            n_bad = sum(1 for f in failures if f["bad_input"])
            write_records(path, records)
            write_failures(path, failures)
            write_manifest(path, {
                **manifests.get(plan.name, {}), "method": plan.name, "command": COMMAND, "config": dict(plan.options),
                "t2i_model": items.name, "suite": suite.name, "subset": suite.subset,
                "n_items": len(items.found.images), "n_scored": len(records), "n_skipped": n_bad,
                "n_missing": len(items.found.missing), "missing": list(items.found.missing),
                "image_paths": {image.id: str(image.path.resolve()) for image in items.found.images}, **context})
            runs.setdefault(items.name, {})[plan.name] = path
    return runs


def suite_facts(suite: PromptSuite) -> dict[str, Any]:
    """The suite as the manifest records it: its name, subset, source, licence, size and files."""
    return {"name": suite.name, "subset": suite.subset, "n_prompts": len(suite), "size": suite.size,
            "source": suite.source, "origin": suite.origin, "license": suite.license, "files": dict(suite.files),
            "categories": {kind: suite.tags(kind) for kind in suite.kinds()}}


def model_entry(model: Any, items: ModelItems, merged: ShardResult, runs: Mapping[str, Path], out: Path,
                generated: Mapping[str, int] | None) -> dict[str, Any]:
    """One model in benchmark.json: where its images came from, what was judged and what was not,
    the judge's counters over its images (images_encoded beside images shows the encode-once
    rule), and its runs."""
    counters = merged.counters.get(items.name, {"images": 0, **dict.fromkeys(COUNTERS, 0)})
    bad = [asdict(f) for f in items.failures] + merged.failures.get(items.name, {}).get("*", [])
    entry = {**model.describe(), "layout": items.found.layout, "n_images": len(items.found.images),
             "images": counters.get("images", 0), **{k: counters.get(k, 0) for k in COUNTERS},
             "n_missing": len(items.found.missing), "missing": list(items.found.missing),
             "n_bad_images": len(bad), "bad_images": [{"id": f["item"], "reason": f["reason"]} for f in bad],
             "unmatched_files": list(items.found.unmatched),
             "runs": {method: path.relative_to(out).as_posix() for method, path in runs.items()}}
    if generated is not None:
        entry["generation"] = dict(generated)
    return entry


def benchmark_manifest(suite: PromptSuite, plans: Sequence[MethodPlan], entries: Sequence[Mapping[str, Any]],
                       judge: Mapping[str, Any] | None, context: Mapping[str, Any]) -> dict[str, Any]:
    """benchmark.json: the suite, the models (`model_entry`), the methods with their options and
    headline statistic, the judge's manifest, the judge's counters summed over the models, and the
    run's settings (`context`)."""
    from .. import __version__

    return {"command": COMMAND, "library_version": __version__, "suite": suite_facts(suite), "models": list(entries),
            "methods": [{"name": plan.name, "options": dict(plan.options), "judge": plan.needs_judge,
                         "statistic": next(iter(plan.spec.statistics), None)} for plan in plans],
            "judge": judge, "images": sum(entry["images"] for entry in entries),
            **{name: sum(entry[name] for entry in entries) for name in COUNTERS}, **context,
            "leaderboard": "leaderboard.json", "report": "report.html"}


def write_benchmark_manifest(out: Path, manifest: Mapping[str, Any]) -> Path:
    """Write OUT/benchmark.json whole."""
    path = out / BENCHMARK_MANIFEST
    return write_text_whole(path, json_text(dict(manifest), str(path), indent=2, default=str) + "\n")


def read_benchmark_manifest(out: str | Path) -> dict[str, Any]:
    """OUT/benchmark.json as written."""
    return json.loads((Path(out) / BENCHMARK_MANIFEST).read_text(encoding="utf-8"))


def failure_lines(models: Sequence[ModelItems], merged: ShardResult) -> list[Failure]:
    """Every image without a result, for the closing list: `model/id: reason` once per image and
    method that failed (a bad image once, for all methods)."""
    lines = []
    for items in models:
        bad = [asdict(f) for f in items.failures] + merged.failures.get(items.name, {}).get("*", [])
        lines += [Failure(f["index"], f"{items.name}/{f['item']}", f["reason"], True) for f in bad]
        for method, failures in merged.failures.get(items.name, {}).items():
            if method != "*":
                lines += [Failure(f["index"], f"{items.name}/{f['item']} ({method})", f["reason"]) for f in failures]
    return lines
