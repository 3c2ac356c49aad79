"""`vlmjudge benchmark`: a prompt suite, several text-to-image models (image folders or diffusers
pipelines), every method over one judge, one leaderboard; the flags map onto `vlmjudge.benchmark(...)`.

Bad input (an unknown suite or method, a generator that cannot load, a folder for a file, a bad
option) is one line and exit status 2 before any image is made or judged.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..cli.flags import add_judge_flags, add_no_cache_flag, add_on_error_flag, judge_recipe_from_args
from ..cli.generator_flags import positive_int
from ..cli.report_command import add_dpi_flag
from ..cli.help import EXIT_EPILOG, DefaultsHelpFormatter, describe
from ..cli.progress import add_quiet_flag
from ..text import format_score

EXAMPLE = ("example: vlmjudge benchmark --prompts prompts.csv --model-images A=images/a --model-images B=images/b "
           "--methods terravis,viescore2 --judge Qwen/Qwen3-VL-8B-Instruct --out benchmark/")


def configure_benchmark(sub: argparse._SubParsersAction) -> None:
    """Add the `benchmark` sub-command."""
    from ..cli.agreement import PUBLIC_SETS

    parser = sub.add_parser(
        "benchmark", help="benchmark text-to-image models on a prompt suite with every method: one leaderboard",
        description="Scores every model's image of every prompt with every method over one judge (each image "
                    "encoded once), writes OUT/runs/<model>/<method>/records.jsonl (read by compare and agreement), "
                    "OUT/benchmark.json, OUT/leaderboard.json (values with intervals, ranks, mean rank, ranking "
                    "agreement) and OUT/report.html. A rerun with the same --out resumes: generated images are "
                    "kept and the judge's answers come from its cache. " + EXAMPLE,
        epilog=EXIT_EPILOG, formatter_class=DefaultsHelpFormatter)
    suite = parser.add_argument_group("prompts (one of --suite, --prompts)")
    suite.add_argument("--suite", default=None, help="a named suite: genai-bench, drawbench, partiprompts, tifa-v1, "
                                                     "coco-captions, fager, regeneration (docs: Prompt suites)")
    suite.add_argument("--subset", default=None, help="the suite's subset (default: its default, e.g. 1600)")
    suite.add_argument("--suite-file", default=None, metavar="PATH",
                       help="a local copy of the suite's published file or folder (offline runs need one)")
    suite.add_argument("--prompts", default=None, metavar="FILE",
                       help="your own suite: CSV, TSV or JSONL with id, prompt, optional category and reference")
    models = parser.add_argument_group("models under test")
    models.add_argument("--model-images", action="append", default=None, metavar="NAME=DIR",
                        help="a model's images: DIR/<prompt id>.png (or .jpg, .jpeg, .webp), or DIR/<prompt id>/<k>.png "
                             "for several per prompt (repeatable)")
    models.add_argument("--generator", action="append", default=None, metavar="NAME=PIPELINE",
                        help="a diffusers pipeline (Hub id or folder) or module:callable that makes the images, into "
                             "OUT/images/NAME/ (repeatable)")
    models.add_argument("--seed", type=int, default=0, help="base seed; image k of a prompt gets a seed derived from "
                                                           "(seed, prompt id, k), the same in every run")
    models.add_argument("--steps", type=positive_int, default=None,
                        help="num_inference_steps of the pipelines (default: each pipeline's)")
    models.add_argument("--size", default=None, metavar="N|WxH",
                        help="image size in pixels, N for N x N or WIDTHxHEIGHT (default: each pipeline's)")
    models.add_argument("--images-per-prompt", type=positive_int, default=1,
                        help="images per prompt from each generator (more than 1: OUT/images/NAME/<id>/<k>.png)")
    models.add_argument("--generator-dtype", default=None, help="the pipelines' dtype (default: the pipeline's)")
    models.add_argument("--generator-batch-size", type=positive_int, default=4, help="prompts per pipeline call")
    methods = parser.add_argument_group("methods")
    methods.add_argument("--methods", required=True, help="comma-separated registered methods, e.g. terravis,viescore2")
    methods.add_argument("--method-option", action="append", default=None, metavar="METHOD.KEY=VALUE",
                         help="an option of one method, typed by its default, e.g. terravis.variant=holistic (repeatable)")
    add_judge_flags(parser, ("--judge", "--model"))
    describe(parser, "--out", "the benchmark's folder: runs/, images/, benchmark.json, leaderboard.json, report.html",
             required=True)
    describe(parser, "--cache", "SQLite file of the judge's answers; a rerun resumes from it (default: "
                                "OUT/judge.cache.sqlite; --no-cache for none)")
    add_no_cache_flag(parser)
    run = parser.add_argument_group("run")
    run.add_argument("--chunk-size", type=positive_int, default=16,
                     help="images per chunk: every method scores a chunk before the next, so each image is encoded once")
    add_on_error_flag(run)
    add_quiet_flag(run)
    run.add_argument("--ray", action="store_true", help="generate and judge on Ray Data actor pools (RAY_ADDRESS, "
                                                        "else a local cluster)")
    run.add_argument("--ray-actors", type=positive_int, default=1, help="actors per pool, one model copy each")
    run.add_argument("--ray-gpus-per-actor", type=float, default=0, help="GPUs each actor reserves")
    board = parser.add_argument_group("leaderboard")
    board.add_argument("--human", default=None, metavar="FILE", help="human labels: each method's agreement with "
                                                                     "people, overall and per model, in the report")
    board.add_argument("--human-format", choices=("labels", *PUBLIC_SETS), default="labels",
                       help="the labels' format, as `vlmjudge agreement` reads them")
    board.add_argument("--resamples", type=positive_int, default=2000, help="bootstrap resamples")
    board.add_argument("--confidence", type=float, default=0.95, help="interval confidence")
    board.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap")
    add_dpi_flag(board)
    parser.set_defaults(func=run_benchmark_command)


def _judge(args: argparse.Namespace) -> Any:
    """The judge's recipe from the judge flags (checked now, loaded by the run), or None when no
    method needs a judge; the cache defaults to OUT/judge.cache.sqlite."""
    import os

    from .api import DEFAULT_CACHE, default_judge_model
    from .methods import resolve_methods

    plans = resolve_methods(args.methods)
    if not any(plan.needs_judge for plan in plans):
        if args.model:
            print(f"note: --judge {args.model} is not used: {', '.join(p.name for p in plans)} need no judge",
                  file=sys.stderr)
        return None
    if args.no_cache:
        args.cache = None
    elif args.cache is None:
        args.cache = os.path.join(os.path.expanduser(args.out), DEFAULT_CACHE)
    if not args.model and default_judge_model(plans) is None:
        from .models import BenchmarkError
        raise BenchmarkError("the methods have different default judges: give --judge MODEL")
    return judge_recipe_from_args(args, default_judge_model(plans))


def run_benchmark_command(args: argparse.Namespace) -> int:
    """Run the benchmark the flags describe; one line and status 2 for bad input."""
    from .api import benchmark
    from .models import BenchmarkError
    from .suites import SuiteError

    try:
        recipe = _judge(args)
        result = benchmark(
            out=args.out, methods=args.methods, suite=args.suite, subset=args.subset, suite_file=args.suite_file,
            prompts=args.prompts, model_images=args.model_images, generators=args.generator, seed=args.seed,
            steps=args.steps, size=args.size, images_per_prompt=args.images_per_prompt,
            generator_device=args.device, generator_dtype=args.generator_dtype,
            generator_batch_size=args.generator_batch_size, method_options=args.method_option, judge=recipe,
            chunk_size=args.chunk_size, on_error=args.on_error, human=args.human, human_format=args.human_format,
            n_resamples=args.resamples, stats_seed=args.bootstrap_seed, confidence=args.confidence, dpi=args.dpi,
            ray=args.ray, ray_actors=args.ray_actors, ray_gpus_per_actor=args.ray_gpus_per_actor, quiet=args.quiet)
    except (BenchmarkError, SuiteError, OSError) as error:  # OSError: a folder given for a file, an unreadable file
        print(f"vlmjudge benchmark: error: {error}", file=sys.stderr)
        return 2
    if result.leaderboard is not None:
        print_leaderboard(result.leaderboard)
        print(f"wrote {result.out / 'benchmark.json'}, {result.out / 'leaderboard.json'}, {result.out / 'report.html'}",
              file=sys.stderr)
    return result.status


def print_leaderboard(board: dict[str, Any]) -> None:
    """The leaderboard's rows, by method then rank, one line each with its unscored count, then its
    warnings (models scored on different numbers of items, too few items)."""
    rows = sorted(board.get("rows", []), key=lambda r: (str(r.get("method")), r.get("rank") or 0))
    for row in rows:
        value, low, high = (row.get(k) for k in ("value", "low", "high"))
        shown = (f"{format_score(value)} [{format_score(low)}, {format_score(high)}]"
                 if value is not None and None not in (low, high) else format_score(value))
        unscored = f" unscored={row['n_unscored']} of {row['n_items']}" if "n_unscored" in row else ""
        print(f"{row.get('method')} #{row.get('rank', '-')} {row.get('model')}: {shown} n={row.get('n')}{unscored}")
    for line in board.get("warnings", []):
        print(f"warning: {line}")
