"""`vlmjudge regeneration ...`: run the regeneration loop, benchmark several models, compare folders.

    vlmjudge regeneration run --references DIR --generator GEN --model VLM --out DIR [options]
    vlmjudge regeneration benchmark --references DIR --generator NAME=GEN [--generator NAME=GEN ...] --model VLM --out DIR
    vlmjudge regeneration compare REFS GENS [--model VLM] [--json] [--csv FILE] [--out pairs.jsonl]

GEN is a diffusers pipeline folder or Hub id, or `module:callable` (a function
`(prompts, seeds) -> images`). A run folder resumes: rerunning the same command skips every
prompt, image and score already saved.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vlmjudge.cli.errors import CommandError
from vlmjudge.cli.exits import RUN
from vlmjudge.cli.flags import (
    add_judge_flags, add_no_cache_flag, add_on_error_flag, judge_from_args,
)
from vlmjudge.cli.generator_flags import add_generator_call_flags, generator_call_kwargs
from vlmjudge.cli.help import EXIT_EPILOG, DefaultsHelpFormatter, describe
from vlmjudge.cli.intake import Failure, Screened
from vlmjudge.cli.resume import cache_has_answers, done_in_jsonl
from vlmjudge.cli.scoring import Outcome, ScoreCommand, run_scoring
from vlmjudge.cli.progress import ItemProgress, add_quiet_flag, progress_bar, quiet_judge
from vlmjudge.cli.summary import print_summary
from vlmjudge.outputs import write_manifest, write_records
from vlmjudge.stats.interval import interval_text, mean_with_interval
from vlmjudge.text import format_score

from .evaluation import benchmark
from .config import DEFAULT_ASPECTS, INTERROGATOR_RUNS, PROMPT_MODES, LoopConfig, parse_weights
from .core import RegenerationLoop, candidate_count
from .parsing import READINGS
from .scoring import DEFAULT_SELECTION, SELECTION_PRESETS
from .similarity import (
    DEFAULT_CLIP_MODEL,
    DEFAULT_DINO_MODEL,
    POOLINGS,
    SimilarityScorer,
)


#: `regeneration compare` scores this many pairs between progress-bar updates.
COMPARE_CHUNK = 32
#: The records file a run folder gets: one ItemResult per reference, in the shared layout.
RUN_RECORDS = "records.jsonl"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the regeneration subcommands to `vlmjudge regeneration` (entry point `vlmjudge.commands`)."""
    commands = parser.add_subparsers(dest="regeneration_command", required=True)

    run = commands.add_parser("run", help="regenerate every reference image with one text-to-image model",
                              description="ImageRepainter: IUT -> prompt variants -> generation -> selection -> "
                                          "feedback -> one-aspect revision, for T rounds; resumable run folder.",
                              formatter_class=DefaultsHelpFormatter)
    run.add_argument("--references", required=True, type=Path, help="folder of reference images")
    run.add_argument("--generator", required=True, help="diffusers folder / Hub id, or module:callable")
    _loop_flags(run)
    describe(run, "--out", "the run folder, with records.jsonl (one record per reference) and its manifest "
                           "records.manifest.json; rerunning the same command resumes it (required)")
    run.set_defaults(func=run_run)

    bench = commands.add_parser("benchmark", help="several models over one reference folder: table, grids, plots",
                                formatter_class=DefaultsHelpFormatter)
    bench.add_argument("--references", required=True, type=Path, help="folder of reference images")
    bench.add_argument("--generator", required=True, action="append", metavar="NAME=GEN",
                       help="a model to evaluate (repeatable): NAME=diffusers folder / Hub id / module:callable")
    bench.add_argument("--prompts", type=Path,
                       help="original prompts (CSV id,prompt or JSONL) for direct judging (default: none)")
    bench.add_argument("--direct-judging", action="store_true",
                       help="baseline: rate images generated from the original prompts against them directly")
    _loop_flags(bench)
    describe(bench, "--out", "the benchmark folder: one run folder per model (models/NAME, each with its "
                             "records.jsonl), the table, grids and plots (required)")
    bench.set_defaults(func=run_benchmark)

    compare = commands.add_parser("compare", help="CLIP %% and DINO %% (and MLLM ratings) of two image folders",
                                  description="Pairs images by file name (stem) and reports per-pair and mean "
                                              "similarity; with --model also MLLM content and perceptual ratings. "
                                              "Every image is checked before any model loads: a pair with an "
                                              "unreadable image is listed as 'path: reason' (and written beside "
                                              "--csv, else --out, as .failures.jsonl) and left out; a pair with an "
                                              "image under the recommended 64 px is scored, its row's "
                                              "resolution_note says so. A file with no partner of the same stem "
                                              "in the other folder is listed by name and counted as unpaired. "
                                              "MLLM ratings: mllm_content_rating and mllm_perceptual_rating are "
                                              "a pair's 1-5 ratings, mllm_content and mllm_perceptual the same "
                                              "ratings normalised to 0..1, (r - 1) / 4 (means in the summary). "
                                              "--out FILE gets one pair row per line, with the manifest (summary, "
                                              "unpaired files, encoders, judge) beside it and, with --model, the "
                                              "answer cache (<stem>.manifest.json, <stem>.cache.sqlite).",
                                  epilog=EXIT_EPILOG, formatter_class=DefaultsHelpFormatter)
    compare.add_argument("refs", type=Path, help="folder of reference images")
    compare.add_argument("gens", type=Path, help="folder of regenerated images (same file stems)")
    compare.add_argument("--json", action="store_true", help="print the whole result as JSON")
    compare.add_argument("--csv", type=Path, help="write per-pair rows to this CSV (default: no CSV)")
    _encoder_flags(compare)
    add_judge_flags(compare)
    describe(compare, "--out", "the pair rows as JSON lines (a .jsonl file), the manifest beside them (default: "
                               "no file; --json prints the whole result as one JSON object)")
    describe(compare, "--cache", "SQLite file of the MLLM's answers; a rerun resumes from it (default: beside --out, "
                                 "pairs.jsonl -> pairs.cache.sqlite; none without --out)")
    add_no_cache_flag(compare)
    describe(compare, "--model", "the MLLM that rates content and perceptual quality per pair: a Hub id, a local "
                                 "checkpoint folder, a server's model name, or a replay JSONL (default: none, "
                                 "CLIP and DINO only)")
    add_on_error_flag(compare)
    add_quiet_flag(compare)
    compare.set_defaults(func=run_compare)

    from .report import configure_report  # the report of a compare run
    configure_report(commands)


def _encoder_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("similarity encoders")
    g.add_argument("--clip-model", default=DEFAULT_CLIP_MODEL, help="CLIP image encoder: a Hub id or local folder")
    g.add_argument("--dino-model", default=DEFAULT_DINO_MODEL, help="DINOv2 image encoder: a Hub id or local folder")
    g.add_argument("--pooling", choices=POOLINGS, default="mean",
                   help="DINOv2 embedding: mean (over the tokens) or cls (the CLS token)")
    g.add_argument("--encoder-device", default=None, help="device of the encoders (default: cuda if available)")


def _loop_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("loop")
    g.add_argument("--rounds", type=int, default=4, help="T rounds (default 4, the paper; the public code used 3)")
    g.add_argument("--variants", type=int, default=3, help="N prompts per round (default 3)")
    g.add_argument("--aspects", default=",".join(DEFAULT_ASPECTS),
                   help=f"revision queue, one aspect per round (default {','.join(DEFAULT_ASPECTS)})")
    g.add_argument("--selection", choices=sorted(SELECTION_PRESETS), default=None,
                   help="selection preset: release = 0.5 CLIP + 0.5 DINO (default, the public code), paper = CLIP, "
                        "DINO and the MLLM's content rating, a third each (the paper selects with all three)")
    g.add_argument("--weights", default=None,
                   help="an explicit selection mix over clip, dino, mllm, e.g. clip=0.5,dino=0.5, instead of "
                        "--selection (default: the --selection preset's mix)")
    g.add_argument("--prompt-mode", choices=[m for m in PROMPT_MODES if m != "user"], default="iut",
                   help="initial prompt: iut (default), direct (MLLM without IUT; feedback still sees the IUT), "
                        "interrogator (caption + CLIP)")
    g.add_argument("--interrogator", choices=INTERROGATOR_RUNS, default="single",
                   help="interrogator baseline: single = its prompt as written, one image (default, the paper); "
                        "loop = through the T-round loop")
    g.add_argument("--json-reading", choices=READINGS, default=READINGS[0],
                   help="how answers are read: release = first { to last }, strict JSON (default); tolerant = "
                        "the first complete object, raw control characters allowed")
    g.add_argument("--final", choices=("last", "best"), default="last",
                   help="the regeneration is the last round's pick (default, the paper) or the best of all rounds")
    g.add_argument("--no-final-mllm", action="store_true", help="skip MLLM content/perceptual ratings at the end")
    g.add_argument("--seed", type=int, default=0, help="base seed of the generator (default 0)")
    g.add_argument("--pack", default=None,
                   help="JSON file overriding prompt templates (default: the shipped templates)")
    g.add_argument("--text-model", default=None,
                   help="a separate text-only judge for prompt writing and revision (default: --model does all)")
    g.add_argument("--text-backend", default="transformers", help="backend of --text-model")
    gen = parser.add_argument_group("generator")
    gen.add_argument("--generator-device", default=None,
                     help="device of a diffusers generator (default: cuda if available)")
    gen.add_argument("--generator-dtype", default=None,
                     help="dtype of a diffusers generator, e.g. float16 (default: the pipeline's)")
    gen.add_argument("--generator-batch", type=int, default=8, help="prompts per generator call (default 8)")
    add_generator_call_flags(gen)
    gen.add_argument("--guidance-scale", type=float, default=None,
                     help="guidance_scale for a diffusers pipeline (default: the pipeline's)")
    _encoder_flags(parser)
    add_judge_flags(parser)
    add_quiet_flag(parser)


def _config(args: argparse.Namespace) -> LoopConfig:
    if args.weights is not None and args.selection is not None:
        raise ValueError("give --selection or --weights, not both")
    weights = parse_weights(args.weights) if args.weights is not None else None
    selection = args.selection or (DEFAULT_SELECTION if weights is None else None)
    return LoopConfig.make(weights=weights, selection=selection, rounds=args.rounds, variants=args.variants,
                           aspects=[a.strip() for a in args.aspects.split(",") if a.strip()],
                           prompt_mode=args.prompt_mode, final=args.final, final_mllm=not args.no_final_mllm,
                           seed=args.seed, generator_batch=args.generator_batch, interrogator=args.interrogator,
                           json_reading=args.json_reading)


def _generator(spec: str, args: argparse.Namespace) -> Any:
    from vlmjudge.generators import is_module_spec, load_generator

    if is_module_spec(spec):
        return load_generator(spec)
    call = {**generator_call_kwargs(args), "guidance_scale": args.guidance_scale}
    return load_generator(spec, device=args.generator_device, dtype=args.generator_dtype,
                          **{k: v for k, v in call.items() if v is not None})


def _similarity(args: argparse.Namespace) -> SimilarityScorer:
    return SimilarityScorer(args.clip_model, args.dino_model, pooling=args.pooling, device=args.encoder_device)


def _text_judge(args: argparse.Namespace) -> Any:
    if not args.text_model:
        return None
    from vlmjudge import load_judge
    return quiet_judge(load_judge(args.text_model, backend=args.text_backend, batch_size=args.batch_size))


def _require_out(args: argparse.Namespace) -> Path:
    if not args.out:
        raise SystemExit("--out (the run folder) is required")
    return Path(args.out)


def run_run(args: argparse.Namespace) -> int:
    """Run the loop for one model under a bar over its candidate images; prints one line per
    reference and the means."""
    out = _require_out(args)
    try:
        config = _config(args)
        refs = benchmark.load_references(args.references)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    loop = RegenerationLoop(quiet_judge(judge_from_args(args)), _generator(args.generator, args), _similarity(args),
                            str(out), text_judge=_text_judge(args), config=config, pack=args.pack)
    try:
        with progress_bar(candidate_count(config, len(refs)), "regeneration", args, unit="img") as bar:
            results = loop.run(refs, on_image=bar.update)
    except ValueError as exc:  # a run folder made with other settings, ids that are no folder names, ...
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for r in results:
        if r.status == "scored":
            print(f"{r.id}\tCLIP {format_score(r.clip)}\tDINO {format_score(r.dino)}\tround {r.round}\t{r.prompt}")
        else:
            print(f"{r.id}\tfailed: {r.reason}")
    rows = [r.to_json() for r in results]
    records = out / RUN_RECORDS
    write_records(records, rows)
    manifest = write_manifest(records, {"method": "regeneration", "command": "regeneration run",
                                        "references": str(args.references), "generator": args.generator,
                                        **config.to_json()})
    print_summary(rows, [records, manifest])
    scored = [r for r in results if r.status == "scored"]
    if scored:
        print(f"CLIP {interval_text(mean_with_interval(r.clip for r in scored))} "
              f"DINO {interval_text(mean_with_interval(r.dino for r in scored))}")
    return 0 if any(r.status == "scored" for r in results) else 1


def run_benchmark(args: argparse.Namespace) -> int:
    """Benchmark several models under one bar over all their images; prints the table and where
    the figures went."""
    out = _require_out(args)
    try:
        config = _config(args)
        refs = benchmark.load_references(args.references)
        generators = {}
        for entry in args.generator:
            name, sep, spec = entry.partition("=")
            if not sep or not name or not spec:
                raise ValueError(f"--generator needs NAME=GEN, got {entry!r}")
            generators[name] = spec
        prompts = benchmark.load_prompts(args.prompts) if args.prompts else None
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    total = benchmark.benchmark_images(refs, len(generators), config, prompts, args.direct_judging)
    with progress_bar(total, "benchmark", args, unit="img") as bar:
        result = benchmark.run_benchmark(refs, {n: _generator(s, args) for n, s in generators.items()},
                                         quiet_judge(judge_from_args(args)), out, similarity=_similarity(args),
                                         text_judge=_text_judge(args), config=config, pack=args.pack,
                                         original_prompts=prompts, direct_judging=args.direct_judging,
                                         on_image=bar.update)
    print(Path(result.files["table"]).read_text(encoding="utf-8"), end="")
    for name, results in result.results.items():
        rows = [r.to_json() for r in results]
        records = out / "models" / name / RUN_RECORDS
        write_records(records, rows)
        print(f"{name}: ", end="")
        print_summary(rows, [records])
    for kind, path in result.files.items():
        print(f"{kind}: {path}")
    return 0


def _compare_manifest(args: argparse.Namespace, scorer: Any, judge: Any, result: dict[str, Any]) -> dict[str, Any]:
    """The manifest beside compare's pair rows: what judged, the encoders, the folders, the summary
    and the files left unpaired (the report lists them)."""
    made_by = judge.manifest() if judge is not None and callable(getattr(judge, "manifest", None)) else {}
    return {**made_by, "method": "regeneration", "command": "regeneration compare", "refs": str(args.refs),
            "gens": str(args.gens), "encoders": scorer.similarity.manifest(), "summary": result["summary"],
            "unpaired_files": result["unpaired_files"], "cache": args.cache if judge is not None else None}


def run_compare(args: argparse.Namespace) -> int:
    """Per-pair and mean score, CLIP % / DINO % (and MLLM ratings with --model) of two folders;
    unpaired files and pairs with an unreadable image are listed and left out, and the exit
    status says so (see --help). --out gets the pair rows as JSON lines, --json prints the whole result."""
    if args.out is not None and Path(args.out).suffix.lower() == ".json":
        raise CommandError(f"regeneration compare --out {args.out}: --out takes a JSON-lines file, e.g. --out "
                           f"{Path(args.out).with_suffix('.jsonl')}; --json prints the whole result as one object")
    return run_scoring(_CompareScore(args, args.csv or args.out))  # the failures go beside --csv, else --out


class _CompareScore(ScoreCommand):
    """`regeneration compare`: one row per pair of same-stem images, written once all are scored."""
    read_errors = (ValueError, FileNotFoundError)
    build_errors = ()

    def read(self) -> list[tuple[Path, Path]]:
        """The pairs of the two folders, each item its reference and its regenerated image; the
        files without a partner are listed here."""
        from .evaluation.compare import pair_folders

        self.pairing = pair_folders(self.args.refs, self.args.gens)
        if self.pairing.unpaired:
            print(self.pairing.describe_unpaired(), file=sys.stderr)
        return [(ref, gen) for _, ref, gen in self.pairing.pairs]

    def check(self) -> None:
        """The judge flags, checked before anything loads, only when an MLLM is asked for (--model)."""
        if self.args.model:
            super().check()

    def cache_home(self) -> Path | None:
        """The MLLM's answers are cached beside --out, and only with --model."""
        return self.args.out if self.args.out and self.args.model else None

    def build(self, screened: Screened) -> None:
        """The MLLM judge with --model (else CLIP and DINO only)."""
        self.judge = judge_from_args(self.args) if self.args.model else None

    def done_before(self, screened: Screened) -> int | None:
        """Pairs an earlier run rated with the MLLM (only its answers are cached)."""
        from .evaluation.compare import rated_earlier

        args = self.args
        if self.judge is None or not cache_has_answers(args.cache):
            return None
        names = [self.pairing.pairs[i][1].name for i in screened.kept]
        both = lambda r: r.get("mllm_content") is not None and r.get("mllm_perceptual") is not None  # noqa: E731
        return done_in_jsonl(args.out, names, "id", both) if args.out else rated_earlier(args.csv, names)

    def score(self, screened: Screened) -> tuple[Any, list]:
        """CLIP, DINO (and the MLLM's ratings) of every kept pair: the scorer and its records."""
        from .spec import RegenerationScorer

        kept = [self.pairing.pairs[i] for i in screened.kept]
        scorer = RegenerationScorer(quiet_judge(self.judge), similarity=_similarity(self.args))
        records: list = []
        with ItemProgress(len(kept), "compare", self.args, unit="pair", judges=[self.judge]) as bar:
            for start in range(0, len(kept), COMPARE_CHUNK):
                chunk = kept[start:start + COMPARE_CHUNK]
                bar.start(len(chunk))
                records += scorer.score_batch({"reference": [str(p[1]) for p in chunk],
                                               "generated": [str(p[2]) for p in chunk]})
                bar.advance(len(chunk))
        return scorer, records

    def summarize(self, screened: Screened, scored: tuple[Any, list]) -> Outcome:
        """Write the rows (CSV, JSON lines with the manifest), print them and the shared summary (on
        standard error with --json, whose standard output is the one JSON object)."""
        from .evaluation.compare import judge_failed, pair_row, plain_lines, result_json, summarize, write_csv

        args, pairs, judged = self.args, self.pairing.pairs, self.judge is not None
        scorer, records = scored
        rows = [pair_row(pairs[index][1].name, rec, screened.notes.get(index))
                for index, rec in zip(screened.kept, records)]
        unanswered = [Failure(index, str(pairs[index][2]), "the judge gave no answer for either MLLM rating")
                      for index, rec in zip(screened.kept, records) if judge_failed(rec)]
        summary = summarize(rows, records, self.pairing, skipped=len(screened.failures), judged=judged)
        result = result_json(summary, rows, self.pairing)
        written: list[Any] = []
        if args.csv:
            write_csv(args.csv, rows)
            RUN.saved = len(rows)
            written.append(args.csv)
        if args.out:
            write_records(args.out, rows)
            written += [args.out, write_manifest(args.out, _compare_manifest(args, scorer, self.judge, result))]
            RUN.saved = len(rows)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print("\n".join(plain_lines(rows, summary, judged=judged)))
        print_summary(rows, written, skipped=len(screened.failures),
                      file=sys.stderr if args.json else None)
        return Outcome(len(rows) - len(unanswered), unanswered)
