"""`vlmjudge regeneration ...`: run the regeneration loop, benchmark several models, compare folders.

    vlmjudge regeneration run --references DIR --generator GEN --model VLM --out DIR [options]
    vlmjudge regeneration benchmark --references DIR --generator NAME=GEN [--generator NAME=GEN ...] --model VLM --out DIR
    vlmjudge regeneration compare REFS GENS [--model VLM] [--json] [--csv FILE]

GEN is a diffusers pipeline folder or Hub id, or `module:callable` (a function
`(prompts, seeds) -> images`). A run folder resumes: rerunning the same command skips every
prompt, image and score already saved.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

from vlmjudge.cli import add_judge_flags, judge_from_args
from vlmjudge.cli_intake import EXIT_EPILOG, add_on_error_flag
from vlmjudge.intake import IMAGE_SUFFIXES

from .benchmark import load_prompts, load_references, run_benchmark
from .config import DEFAULT_SELECTION, INTERROGATOR_RUNS, SELECTION_PRESETS
from .loop import DEFAULT_ASPECTS, PROMPT_MODES, LoopConfig, RegenerationLoop
from .parsing import READINGS
from .similarity import (
    DEFAULT_CLIP_MODEL,
    DEFAULT_DINO_MODEL,
    POOLINGS,
    SimilarityScorer,
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the regeneration subcommands to `vlmjudge regeneration` (entry point `vlmjudge.commands`)."""
    commands = parser.add_subparsers(dest="regeneration_command", required=True)

    run = commands.add_parser("run", help="regenerate every reference image with one text-to-image model",
                              description="ImageRepainter: IUT -> prompt variants -> generation -> selection -> "
                                          "feedback -> one-aspect revision, for T rounds; resumable run folder.")
    run.add_argument("--references", required=True, type=Path, help="folder of reference images")
    run.add_argument("--generator", required=True, help="diffusers folder / Hub id, or module:callable")
    _loop_flags(run)
    run.set_defaults(func=cmd_run)

    bench = commands.add_parser("benchmark", help="several models over one reference folder: table, grids, plots")
    bench.add_argument("--references", required=True, type=Path, help="folder of reference images")
    bench.add_argument("--generator", required=True, action="append", metavar="NAME=GEN",
                       help="a model to evaluate (repeatable): NAME=diffusers folder / Hub id / module:callable")
    bench.add_argument("--prompts", type=Path, help="original prompts (CSV id,prompt or JSONL) for direct judging")
    bench.add_argument("--direct-judging", action="store_true",
                       help="baseline: rate images generated from the original prompts against them directly")
    _loop_flags(bench)
    bench.set_defaults(func=cmd_benchmark)

    compare = commands.add_parser("compare", help="CLIP %% and DINO %% (and MLLM ratings) of two image folders",
                                  description="Pairs images by file name (stem) and reports per-pair and mean "
                                              "similarity; with --model also MLLM content and perceptual ratings. "
                                              "Every image is checked before any model loads: a pair with an "
                                              "unreadable image is listed as 'path: reason' (and written beside "
                                              "--csv, else --out, as .failures.jsonl) and left out; a pair with an "
                                              "image under the recommended 64 px is scored, its row's "
                                              "resolution_note says so.",
                                  epilog=EXIT_EPILOG)
    compare.add_argument("refs", type=Path, help="folder of reference images")
    compare.add_argument("gens", type=Path, help="folder of regenerated images (same file stems)")
    compare.add_argument("--json", action="store_true", help="print the whole result as JSON")
    compare.add_argument("--csv", type=Path, help="write per-pair rows to this CSV")
    _encoder_flags(compare)
    add_judge_flags(compare)
    add_on_error_flag(compare)
    compare.set_defaults(func=cmd_compare)

    from .report import configure_report  # the report of a compare run
    configure_report(commands)


def _encoder_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("similarity encoders")
    g.add_argument("--clip-model", default=DEFAULT_CLIP_MODEL, help=f"default {DEFAULT_CLIP_MODEL}")
    g.add_argument("--dino-model", default=DEFAULT_DINO_MODEL, help=f"default {DEFAULT_DINO_MODEL}")
    g.add_argument("--pooling", choices=POOLINGS, default="mean", help="DINOv2 pooling (default mean over tokens)")
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
                   help="an explicit selection mix over clip, dino, mllm, e.g. clip=0.5,dino=0.5 (instead of --selection)")
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
    g.add_argument("--pack", default=None, help="JSON file overriding prompt templates")
    g.add_argument("--text-model", default=None, help="a separate text-only judge for prompt writing and revision")
    g.add_argument("--text-backend", default="transformers")
    gen = parser.add_argument_group("generator")
    gen.add_argument("--generator-device", default=None)
    gen.add_argument("--generator-dtype", default=None)
    gen.add_argument("--generator-batch", type=int, default=8, help="prompts per generator call (default 8)")
    gen.add_argument("--steps", type=int, default=None, help="num_inference_steps for a diffusers pipeline")
    gen.add_argument("--guidance-scale", type=float, default=None)
    gen.add_argument("--height", type=int, default=None)
    gen.add_argument("--width", type=int, default=None)
    _encoder_flags(parser)
    add_judge_flags(parser)


def parse_weights(text: str) -> dict[str, float]:
    """'clip=0.5,dino=0.5' -> {'clip': 0.5, 'dino': 0.5}."""
    weights = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"weight {part!r} is not name=value")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"weight {part!r} has no number") from None
    return weights


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
    call = {"num_inference_steps": args.steps, "guidance_scale": args.guidance_scale, "height": args.height,
            "width": args.width}
    return load_generator(spec, device=args.generator_device, dtype=args.generator_dtype,
                          **{k: v for k, v in call.items() if v is not None})


def _similarity(args: argparse.Namespace) -> SimilarityScorer:
    return SimilarityScorer(args.clip_model, args.dino_model, pooling=args.pooling, device=args.encoder_device)


def _text_judge(args: argparse.Namespace) -> Any:
    if not args.text_model:
        return None
    from vlmjudge import load_judge
    return load_judge(args.text_model, backend=args.text_backend, batch_size=args.batch_size)


def _require_out(args: argparse.Namespace) -> Path:
    if not args.out:
        raise SystemExit("--out (the run folder) is required")
    return Path(args.out)


def cmd_run(args: argparse.Namespace) -> int:
    """Run the loop for one model; prints one line per reference and the means."""
    out = _require_out(args)
    try:
        config = _config(args)
        refs = load_references(args.references)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    loop = RegenerationLoop(judge_from_args(args), _generator(args.generator, args), _similarity(args), str(out),
                            text_judge=_text_judge(args), config=config, pack=args.pack)
    try:
        results = loop.run(refs)
    except ValueError as exc:  # a run folder made with other settings, ids that are no folder names, ...
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for r in results:
        if r.status == "ok":
            print(f"{r.item}\tCLIP {r.clip:.2f}\tDINO {r.dino:.2f}\tround {r.round}\t{r.prompt}")
        else:
            print(f"{r.item}\tfailed: {r.reason}")
    ok = [r for r in results if r.status == "ok"]
    if ok:
        print(f"mean over {len(ok)}/{len(results)}: CLIP {sum(r.clip for r in ok) / len(ok):.2f} "
              f"DINO {sum(r.dino for r in ok) / len(ok):.2f}")
    print(f"run folder: {out}")
    return 0 if ok else 1


def cmd_benchmark(args: argparse.Namespace) -> int:
    """Benchmark several models; prints the table and where the figures went."""
    out = _require_out(args)
    try:
        config = _config(args)
        refs = load_references(args.references)
        generators = {}
        for entry in args.generator:
            name, sep, spec = entry.partition("=")
            if not sep or not name or not spec:
                raise ValueError(f"--generator needs NAME=GEN, got {entry!r}")
            generators[name] = spec
        prompts = load_prompts(args.prompts) if args.prompts else None
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = run_benchmark(refs, {n: _generator(s, args) for n, s in generators.items()}, judge_from_args(args), out,
                           similarity=_similarity(args), text_judge=_text_judge(args), config=config, pack=args.pack,
                           original_prompts=prompts, direct_judging=args.direct_judging)
    print(Path(result.files["table"]).read_text(encoding="utf-8"), end="")
    for kind, path in result.files.items():
        print(f"{kind}: {path}")
    return 0


def _pairs(refs: Path, gens: Path) -> list[tuple[str, Path, Path]]:
    def by_stem(folder: Path) -> dict[str, Path]:
        if not folder.is_dir():
            raise FileNotFoundError(f"no folder {folder}")
        return {p.stem: p for p in sorted(folder.iterdir()) if p.suffix.lower() in IMAGE_SUFFIXES}

    r, g = by_stem(refs), by_stem(gens)
    common = sorted(set(r) & set(g))
    if not common:
        raise ValueError(f"no file stems shared by {refs} and {gens}")
    return [(stem, r[stem], g[stem]) for stem in common]


#: Why an MLLM rating is missing when the judge itself failed (regeneration.parsing.parse_answer's words).
_BACKEND_ERROR = "backend error"


def _judge_failed(record: Any) -> bool:
    """True when a pair asked for MLLM ratings got no answer at all: the judge failed, not the parse."""
    mllm = record.mllm
    return (mllm is not None and mllm.content is None and mllm.perceptual is None and bool(mllm.failures)
            and all(_BACKEND_ERROR in f.reason for f in mllm.failures))


def cmd_compare(args: argparse.Namespace) -> int:
    """Per-pair and mean CLIP % / DINO % (and MLLM ratings with --model) of two folders; pairs with
    an unreadable image are listed and left out, and the exit status says so (see --help)."""
    from vlmjudge.cli_intake import finish, nothing_readable, screen, start_run
    from vlmjudge.intake import RUN, Failure

    from .judging import summarize_ratings
    from .spec import RegenerationScorer

    try:
        pairs = _pairs(args.refs, args.gens)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    beside = args.csv or args.out  # where the failures file goes
    start_run(beside)
    screened = screen([(ref, gen) for _, ref, gen in pairs], args.on_error)  # before any model loads
    if not screened.kept:
        return nothing_readable(screened, beside)
    kept = [pairs[i] for i in screened.kept]
    judge = judge_from_args(args) if args.model else None
    scorer = RegenerationScorer(judge, similarity=_similarity(args))
    records = scorer.score_batch({"reference": [str(p[1]) for p in kept], "generated": [str(p[2]) for p in kept]})
    rows = []
    for index, (stem, _, _), rec in zip(screened.kept, kept, records):
        row = {"id": stem, **{k: v for k, v in rec.to_json().items() if k in ("clip", "dino", "score")},
               "mllm_content": rec.mllm.content if rec.mllm else None,
               "mllm_perceptual": rec.mllm.perceptual if rec.mllm else None}
        if index in screened.notes:
            row["resolution_note"] = screened.notes[index]
        rows.append(row)
    unanswered = [Failure(index, str(pairs[index][2]), "the judge gave no answer for either MLLM rating")
                  for index, rec in zip(screened.kept, records) if _judge_failed(rec)]
    summary = {"pairs": len(rows), "clip": sum(r["clip"] for r in rows) / len(rows),
               "dino": sum(r["dino"] for r in rows) / len(rows), "skipped": len(screened.failures)}
    if judge is not None:
        summary.update(summarize_ratings([rec.mllm for rec in records]))
    if args.csv:
        columns = list(dict.fromkeys(key for row in rows for key in row))  # resolution_note only when flagged
        with open(args.csv, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns, restval="")
            writer.writeheader()
            writer.writerows(rows)
        RUN.saved = len(rows)
    if args.json:
        print(json.dumps({"summary": summary, "pairs": rows}, indent=2))
    else:
        for r in rows:
            print(f"{r['id']}\tCLIP {r['clip']:.2f}\tDINO {r['dino']:.2f}")
        print(f"mean over {len(rows)} pairs: CLIP {summary['clip']:.2f} DINO {summary['dino']:.2f}")
    return finish(len(pairs), len(rows) - len(unanswered), [*screened.failures, *unanswered], beside)
