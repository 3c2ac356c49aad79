"""A benchmark run, phase by phase: the generators make what is missing, every model's images are
matched to the suite and checked, one judge loads, every method scores every chunk of images in
turn, process 0 writes the runs and benchmark.json, then the leaderboard and the report.

Everything that can be refused is refused before the first image is made or judged.
"""
from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..reports.figures import DEFAULT_DPI
from .judging import ModelItems, ShardResult, build_scorers, check_model_images, judge_shard
from .methods import MethodPlan, check_inputs
from .models import BenchmarkError, FoundImages, GeneratorModel, ImageFolder, check_distinct, find_images, shown
from .processes import Processes
from .suites import PromptSuite


@dataclass
class RaySettings:
    """Ray Data actor pools for generation and judging: actors per pool and what each reserves."""

    actors: int = 1
    gpus_per_actor: float = 0
    cpus_per_actor: float = 1


@dataclass
class BenchmarkPlan:
    """Everything a benchmark run needs, checked: the suite, the models, the methods with their
    options, the judge (a loaded judge, a `JudgeRecipe`, or None when no method needs one), the
    output folder and the leaderboard's settings."""

    suite: PromptSuite
    models: list[ImageFolder | GeneratorModel]
    methods: list[MethodPlan]
    out: Path
    judge: Any = None
    chunk_size: int = 16
    on_error: str = "skip"
    human: tuple[str, str] | None = None
    n_resamples: int = 2000
    stats_seed: int = 0
    confidence: float = 0.95
    dpi: int = DEFAULT_DPI
    ray: RaySettings | None = None
    quiet: bool = False


@dataclass
class BenchmarkResult:
    """What a run wrote: its exit status (as the judging commands'), benchmark.json's content, the
    runs by model and method, the leaderboard (None off process 0) and the report's files."""

    out: Path
    status: int
    manifest: dict[str, Any]
    runs: dict[str, dict[str, Path]] = field(default_factory=dict)
    leaderboard: dict[str, Any] | None = None
    report: list[Path] = field(default_factory=list)


def check_plan(plan: BenchmarkPlan) -> dict[str, FoundImages]:
    """The refusals before any work: no models or methods, a name twice, inputs the suite lacks, a
    generator that cannot load, an image folder that holds nothing, and models whose images
    cannot pair (one image per prompt against several). Returns the image folders' matches."""
    from .generation import check_generator

    if not plan.models:
        raise BenchmarkError("no models under test: give --model-images NAME=DIR or --generator NAME=PIPELINE")
    if not plan.methods:
        raise BenchmarkError("no methods: give --methods, e.g. terravis,viescore2")
    if plan.chunk_size < 1:
        raise BenchmarkError(f"--chunk-size must be >= 1, got {plan.chunk_size}")
    if plan.out.is_file():
        raise BenchmarkError(f"--out {plan.out} is a file; give a folder for the benchmark's outputs")
    check_distinct(model.name for model in plan.models)
    check_inputs(plan.methods, plan.suite)
    found = {model.name: find_images(model.folder, plan.suite) for model in plan.models
             if isinstance(model, ImageFolder)}
    layouts = {name: f.layout for name, f in found.items()}
    for model in plan.models:
        if isinstance(model, GeneratorModel):
            check_generator(model, plan.suite)
            layouts[model.name] = "one" if model.settings.images_per_prompt == 1 else "several"
    if len(set(layouts.values())) > 1:
        one = [name for name, layout in layouts.items() if layout == "one"]
        several = [name for name, layout in layouts.items() if layout == "several"]
        raise BenchmarkError(f"models {', '.join(one)} have one image per prompt and {', '.join(several)} several "
                             "(<id>/<k>.png): their records could not pair; give every model the same layout")
    if any(method.needs_judge for method in plan.methods) and plan.judge is None:
        raise BenchmarkError("the methods need a judge: give --judge MODEL")
    if plan.ray is not None and plan.judge is not None and not hasattr(plan.judge, "load"):
        raise BenchmarkError("with Ray each actor loads its own judge: give the judge as a model id, not a loaded judge")
    return found


def _generate(plan: BenchmarkPlan, processes: Processes,
              on_image: Callable[[Path], None] | None) -> dict[str, dict[str, int]]:
    """The generation phase: each generator's missing images, one progress bar for the phase."""
    from ..cli.progress import progress_bar
    from .generation import generate, prepare_folder

    generators = [model for model in plan.models if isinstance(model, GeneratorModel)]
    for model in generators:
        model.folder = plan.out / "images" / model.name
    if not generators:
        return {}
    if processes.is_main:
        for model in generators:
            prepare_folder(model, plan.suite)
    processes.wait()
    shares = [processes.shard(len(plan.suite) * model.settings.images_per_prompt) for model in generators]
    quiet = _quiet_flag(plan.quiet or not processes.is_main)
    counts: dict[str, dict[str, int]] = {}
    with closing(progress_bar(sum(end - start for start, end in shares), "generate", quiet, unit="img")) as bar:
        for model in generators:
            if plan.ray is not None:
                from .ray_jobs import generate_ray
                mine = generate_ray(model, plan.suite, plan.ray, bar)
            else:
                mine = generate(model, plan.suite, processes, bar, on_image)
            parts = processes.gather(mine)
            counts[model.name] = {key: sum(part[key] for part in parts) for key in mine}
            processes.wait()  # every image is written before any process matches the folder
    return counts


def _quiet_flag(quiet: bool) -> Any:
    """The namespace `progress_bar` reads its --quiet from (off the main process: no bar)."""
    import argparse
    return argparse.Namespace(quiet=quiet)


def _load_judge(plan: BenchmarkPlan, processes: Processes) -> Any:
    """The one judge every judge-based method shares, loaded once (None when no method needs one)."""
    from ..cli.flags import loading_line
    from ..cli.progress import quiet_judge

    if not any(method.needs_judge for method in plan.methods):
        return None
    judge = plan.judge
    if hasattr(judge, "load") and not hasattr(judge, "generate"):  # a recipe: load it here
        if judge.backend == "transformers" and processes.device_for(judge.device) != judge.device:
            judge = dataclasses.replace(judge, device=processes.device_for(judge.device))  # its own GPU
        if not plan.quiet and processes.is_main:
            print(loading_line(judge.model, judge.backend, judge.device, judge.extra.get("base_url")),
                  file=sys.stderr, flush=True)
        try:
            judge = judge.load()
        except (OSError, ValueError, ImportError) as error:
            from ..cache import CacheFileError
            if isinstance(error, CacheFileError):
                raise
            text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise BenchmarkError(f"cannot load the judge {plan.judge.model}: {text}") from None
    return quiet_judge(judge)


def _judge(plan: BenchmarkPlan, models: list[ModelItems], processes: Processes) -> tuple[Any, ...]:
    """The judging phase: (merged shards, each method's manifest, the judge's manifest)."""
    from ..cli.progress import progress_bar
    from ..distributed.accelerate_shards import scorer_manifest

    total = sum(len(items.kept) for items in models)
    start, end = processes.shard(total)
    quiet = _quiet_flag(plan.quiet or not processes.is_main)
    with closing(progress_bar((end - start) * len(plan.methods), "judge", quiet, unit="img")) as bar:
        if plan.ray is not None:
            from .ray_jobs import judge_ray
            return judge_ray(plan, models, bar)
        judge = _load_judge(plan, processes)
        scorers = build_scorers(plan.methods, judge)
        parts = processes.gather(judge_shard(models, plan.suite, scorers, judge, processes, plan.chunk_size, bar))
    manifests = {method.name: scorer_manifest(scorer) for method, scorer in scorers}
    made_by = getattr(judge, "manifest", None)
    return ShardResult.merged(parts), manifests, made_by() if callable(made_by) else None


def run_benchmark(plan: BenchmarkPlan, *, on_image: Callable[[Path], None] | None = None) -> BenchmarkResult:
    """Run a checked plan; `on_image(path)` is called after each generated image is written."""
    found = check_plan(plan)
    from ..cli.exits import EXIT_NONE_SCORED, RUN, exit_status, report_failures, start_run
    from .leaderboard import build_leaderboard, write_leaderboard  # before any work: a broken install fails first
    from .report import write_benchmark_report
    from .writing import benchmark_manifest, failure_lines, model_entry, write_benchmark_manifest, write_runs

    processes = Processes() if plan.ray is not None else Processes.current()
    start_run(None)
    RUN.cache = _cache_of(plan.judge)
    generated = _generate(plan, processes, on_image)
    models = []
    for model in plan.models:
        matched = found.get(model.name) or find_images(model.folder, plan.suite, "--generator")
        models.append(check_model_images(model.name, matched, plan.on_error))
    if not any(items.kept for items in models):  # every image bad: nothing to judge, no judge to load
        if processes.is_main:
            report_failures(failure_lines(models, ShardResult()), None)
        return BenchmarkResult(plan.out, EXIT_NONE_SCORED, {})
    merged, manifests, judge_manifest = _judge(plan, models, processes)
    if not processes.is_main:
        processes.wait()
        return BenchmarkResult(plan.out, 0, {})
    context = {"cache": RUN.cache, "processes": processes.world, "ray": plan.ray is not None}
    runs = write_runs(plan.out, plan.suite, models, plan.methods, merged, manifests, context)
    entries = [model_entry(model, items, merged, runs[items.name], plan.out, generated.get(model.name))
               for model, items in zip(plan.models, models)]
    expected = sum(len(items.found.images) for items in models) * len(plan.methods)
    results = sum(1 for methods in merged.records.values() for pairs in methods.values()
                  for _, record in pairs if record.get("status") != "failed")
    status = exit_status(expected, results)
    manifest = benchmark_manifest(plan.suite, plan.methods, entries, judge_manifest, {
        **context, "images_per_share": merged.shares, "chunk_size": plan.chunk_size, "exit_status": status})
    write_benchmark_manifest(plan.out, manifest)
    for entry in entries:
        if entry["missing"]:
            print(f"{entry['name']}: no image for {entry['n_missing']} prompt(s), left out of its runs: "
                  f"{shown(entry['missing'], 8)}", file=sys.stderr)
    report_failures(failure_lines(models, merged), None)
    board = build_leaderboard(runs, plan.suite, n_resamples=plan.n_resamples, seed=plan.stats_seed,
                              confidence=plan.confidence, human=plan.human)
    write_leaderboard(board, plan.out)
    report = write_benchmark_report(board, runs, plan.suite, plan.out, dpi=plan.dpi)
    processes.wait()
    return BenchmarkResult(plan.out, status, manifest, runs, board, list(report or []))


def _cache_of(judge: Any) -> str | None:
    """The response cache a recipe loads with (a loaded judge's own, where it says)."""
    cache = getattr(judge, "cache", None)
    path = getattr(cache, "path", cache)
    return None if path is None else str(path)


__all__ = ["BenchmarkPlan", "BenchmarkResult", "RaySettings", "check_plan", "run_benchmark"]
