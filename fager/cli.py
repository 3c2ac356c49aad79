"""`vlmjudge fager ...`: build rubrics, score and refine images, and check saved runs.

The sub-commands are `rubric`, `score`, `refine`, `abtest` and `rescore`.

Each sub-command's --help gives its inputs and outputs; docs/methods/fager.md, "The command line", lists
the CSV columns, the files each writes and how `abtest` pairs and rounds runs.
"""
from __future__ import annotations

import argparse
import os
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
from vlmjudge.outputs import write_manifest
from vlmjudge.stats.interval import interval_text, mean_with_interval

from .evaluation import TIE_MODES, ab_test
from .parsing import AnswerParseError
from .qa_store import QAFormatError, read_qa_csv
from .records import level_values, no_result_reason, with_resolution_note
from .saved_runs import (
    ReplayFormatError, ab_scores, format_summary, read_details, read_items, read_table, rescore, summary_path,
    summary_row, write_verdicts,
)
from .scoring import GatingPolicy

#: `fager score` and `refine` score this many images, `rubric` builds this many prompts' QA sets, between
#: progress-bar updates (each batch still fills the judge's calls).
PROGRESS_ITEMS = 16
#: What an unreadable or malformed input raises: one line and exit status 2, never a traceback.
INPUT_ERRORS = (ReplayFormatError, QAFormatError, AnswerParseError, OSError, ValueError)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the fager subcommands to the `vlmjudge fager` parser (entry point `vlmjudge.commands`)."""
    commands = parser.add_subparsers(dest="fager_command", required=True)
    _configure_model_commands(commands)
    configure_saved_run_commands(commands)

    from .report import configure_report  # the report of a score run
    configure_report(commands)


# ---- commands that run the agents ---------------------------------------------------------------

def _configure_model_commands(commands: argparse._SubParsersAction) -> None:
    rubric = commands.add_parser("rubric", help="build QA sets for prompts with the agents (writes --out, "
                                                "default QA.csv)",
                                 description="Fact proposal, reference-guided extraction, verification and QA "
                                             "generation for every prompt; QA sets are stored and reused.",
                                 formatter_class=DefaultsHelpFormatter)
    rubric.add_argument("prompts", type=Path, help="CSV with index and prompt columns")
    _add_pipeline_flags(rubric)
    add_judge_flags(rubric)
    describe(rubric, "--out", "the QA.csv to write (default: QA.csv in the current folder)")
    add_quiet_flag(rubric)
    rubric.set_defaults(func=run_rubric)

    score = commands.add_parser("score", help="score images against QA sets (writes the --out records, their "
                                              "summary.csv, manifest and answer cache)",
                                description="Level 1 first, levels 2-3 where the gate passes, feedback where the "
                                            "decision needs it. Images are checked before the model loads; a "
                                            "verdict of an image under the recommended 64 px carries "
                                            "provenance.resolution_note. Beside --out go summary.csv "
                                            "(details.jsonl -> summary.csv, run.jsonl -> run.summary.csv), the "
                                            "manifest (<stem>.manifest.json), the answer cache "
                                            "(<stem>.cache.sqlite) and the failures (<out>.failures.jsonl).",
                                epilog=EXIT_EPILOG, formatter_class=DefaultsHelpFormatter)
    score.add_argument("items", type=Path, help="CSV with index, prompt and image columns")
    score.add_argument("--qa", type=Path, default=None, help="QA.csv to score against (default: build or reuse)")
    _add_pipeline_flags(score)
    add_policy_flags(score)
    add_judge_flags(score)
    describe(score, "--out", "the JSONL of Verdicts to write; summary.csv and the manifest go beside it "
                             "(default: fager_run/details.jsonl; a file, never a folder)")
    describe(score, "--cache", "SQLite file of the judge's answers; a rerun resumes from it (default: beside --out, "
                               "details.jsonl -> details.cache.sqlite)")
    add_no_cache_flag(score)
    add_on_error_flag(score)
    add_quiet_flag(score)
    score.set_defaults(func=run_score)

    refine = commands.add_parser("refine", help="keep / edit / regenerate images and re-evaluate (writes "
                                                "round folders and report.json/report.md into --out)",
                                 description="Refinement rounds over the generators; saved images are reused "
                                             "when a run is repeated. Into --out go round_0/, round_1/, ... "
                                             "(verdicts.jsonl, summary.csv, images/, manifest.jsonl) and "
                                             "report.json and report.md.", formatter_class=DefaultsHelpFormatter)
    refine.add_argument("items", type=Path, help="CSV with index, prompt and image columns")
    refine.add_argument("--qa", type=Path, default=None, help="QA.csv to score against (default: build or reuse)")
    refine.add_argument("--generator", default=None,
                        help="text-to-image model for regenerate: module:callable, diffusers folder or Hub id "
                             "(default: none; a regenerate decision is then recorded as no_generator)")
    refine.add_argument("--editor", default=None,
                        help="image editor for edit: module:callable, diffusers folder or Hub id "
                             "(default: none; an edit decision is then recorded as no_editor)")
    refine.add_argument("--rounds", type=int, default=1, help="refinement rounds (default 1, as in the paper)")
    refine.add_argument("--seed", type=int, default=0, help="base seed of the generators")
    sizing = refine.add_argument_group("generator call", "a diffusers --generator gets all three; a diffusers "
                                                         "--editor only --steps (it keeps its input's size)")
    add_generator_call_flags(sizing)
    _add_pipeline_flags(refine)
    add_policy_flags(refine)
    add_judge_flags(refine)
    describe(refine, "--out", "the folder for the round folders and report.json/report.md (default: fager_refine)")
    add_quiet_flag(refine)
    refine.set_defaults(func=run_refine)


def _add_pipeline_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--references", type=Path, default=None,
                        help="folder of reference images: <id>/*.png or <id>.png per prompt id "
                             "(default: none, facts come from the model alone)")
    parser.add_argument("--max-references", type=int, default=3, help="reference images per prompt (default 3)")
    parser.add_argument("--store", type=Path, default=None,
                        help="QA store folder that reuses QA sets across runs "
                             "(default: none, QA sets are kept for this run only)")
    parser.add_argument("--pack", default=None,
                        help="prompt pack: a shipped name or a JSON file (default: the shipped default pack)")
    parser.add_argument("--text-model", default=None, help="model of the text agents (default: --model)")
    parser.add_argument("--text-backend", default=None, help="backend of the text model (default: --backend)")
    parser.add_argument("--chunk-size", type=int, default=512, help="requests per judge call (default 512)")


def _pipeline(args: argparse.Namespace, policy: GatingPolicy | None = None):
    from .core import Fager
    judge = judge_from_args(args)
    text_judge = None
    if args.text_model:
        text_args = argparse.Namespace(**{**vars(args), "model": args.text_model,
                                          "backend": args.text_backend or args.backend})
        text_judge = judge_from_args(text_args)
    return Fager(judge, text_judge, pack=args.pack, store=args.store, references=args.references,
                 max_references=args.max_references, chunk_size=args.chunk_size,
                 policy=policy or GatingPolicy())


def run_rubric(args: argparse.Namespace) -> int:
    """Build QA sets under a bar over the prompts and write QA.csv; 1 if any prompt failed (the
    others are written), 2 on bad input."""
    from .qa_store import write_qa_csv
    try:
        rows = read_table(args.prompts, ("index", "prompt"))
        fager = _pipeline(args)
        quiet_judge(fager.judge)
        quiet_judge(fager.text_judge)
        builds: list = []
        with ItemProgress(len(rows), "rubric", args, unit="prompt", judges=[fager.judge, fager.text_judge]) as bar:
            for start in range(0, len(rows), PROGRESS_ITEMS):
                chunk = rows[start:start + PROGRESS_ITEMS]
                bar.start(len(chunk))
                builds += fager.build([r["prompt"] for r in chunk], ids=[r["index"] for r in chunk])
                bar.advance(len(chunk))
    except INPUT_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out or "QA.csv")
    write_qa_csv([b.qa for b in builds if b.qa is not None], out)
    failed = [b for b in builds if b.qa is None]
    for b in builds:
        for note in b.notes:
            print(f"note: index {b.index}: {note}", file=sys.stderr)
    for b in failed:
        print(f"failed: index {b.index}: {'; '.join(b.errors)}", file=sys.stderr)
    reused = sum(b.reused for b in builds)
    print(f"wrote {out}: {len(builds) - len(failed)} QA sets ({reused} reused), {len(failed)} failed",
          file=sys.stderr)
    return 1 if failed else 0


def run_score(args: argparse.Namespace) -> int:
    """Check the images, score the readable items and write details.jsonl and summary.csv into --out;
    unreadable images and items without a result are listed, and the exit status says so (--help)."""
    return run_scoring(_FagerScore(args, _records_path(args)))


class _FagerScore(ScoreCommand):
    """`fager score`: the Verdicts of all items, written together once every item is scored."""
    read_errors = score_errors = INPUT_ERRORS

    def read(self) -> list[tuple[Path]]:
        """The items of the CSV, each one image; a missing image file is a bad item, not an error."""
        self.ids, self.prompts, self.images = read_items(self.args.items, require_files=False)
        return [(image,) for image in self.images]

    def done_before(self, screened: Screened) -> int | None:
        """A rerun: the earlier run's answered items are in the cache (checked before the model loads)."""
        if not cache_has_answers(self.args.cache):
            return None
        return done_in_jsonl(self.out, {self.ids[i] for i in screened.kept}, "id",
                             lambda v: "qa_error" not in (v.get("provenance") or {})
                             and (v.get("counts") or {}).get("total", 0) > 0)

    def score(self, screened: Screened) -> list:
        """Build or read the QA sets and score the kept items, a few at a time under the progress bar:
        their Verdicts."""
        args, kept = self.args, screened.kept
        qa_sets = read_qa_csv(args.qa) if args.qa else None
        self.fager = _pipeline(args, policy_from_args(args))
        quiet_judge(self.fager.judge)
        quiet_judge(self.fager.text_judge)
        verdicts: list = []
        judges = [self.fager.judge, self.fager.text_judge]
        with ItemProgress(len(kept), "fager", args, unit="img", judges=judges) as bar:
            for start in range(0, len(kept), PROGRESS_ITEMS):
                chunk = kept[start:start + PROGRESS_ITEMS]
                bar.start(len(chunk))
                verdicts += self.fager.score([self.images[i] for i in chunk], [self.prompts[i] for i in chunk],
                                             qa_sets=qa_sets, ids=[self.ids[i] for i in chunk])
                bar.advance(len(chunk))
        return verdicts

    def image_name(self, item: int) -> str:
        """An item's image as its record names it: the CSV's `image` value, a path relative to the
        CSV's folder (or an absolute one), so a report finds the file from the manifest's
        `input_root`, where a bare file name would leave it lost among the CSV's folders."""
        path = self.images[item]
        try:
            return path.relative_to(self.args.items.parent).as_posix()
        except ValueError:  # an absolute path in the CSV
            return str(path)

    def summarize(self, screened: Screened, verdicts: list) -> Outcome:
        """Write the Verdicts, summary.csv and the manifest; print the shared summary, then each level's
        mean with its 95% interval and n, and the parse failures."""
        args, details, images, kept = self.args, self.out, self.images, screened.kept
        verdicts = [with_resolution_note(v, screened.notes.get(i)).model_copy(update={"image": self.image_name(i)})
                    for i, v in zip(kept, verdicts)]
        details.parent.mkdir(parents=True, exist_ok=True)
        write_verdicts(verdicts, details)
        summary = summary_path(details)
        summary.write_text(format_summary(verdicts), encoding="utf-8", newline="")
        manifest = write_manifest(details, _manifest(args, self.fager, len(images), len(screened.failures)))
        RUN.saved = len(verdicts)
        unanswered = [Failure(i, str(images[i]), reason) for i, v in zip(kept, verdicts)
                      if (reason := no_result_reason(v)) is not None]
        print_summary([{"status": v.status, "score": v.score} for v in verdicts], [details, summary, manifest],
                      skipped=len(screened.failures))
        if any(v.score is not None for v in verdicts):
            print("levels: " + ", ".join(f"{name} {interval_text(mean_with_interval(values))}"
                                         for name, values in level_values(verdicts).items()))
        print(f"parse failures: {sum(v.counts.failed for v in verdicts)}")
        return Outcome(len(verdicts) - len(unanswered), unanswered)


#: Where `fager score` writes without --out: the released run layout.
DEFAULT_DETAILS = Path("fager_run") / "details.jsonl"


def _records_path(args: argparse.Namespace) -> Path:
    """The Verdict lines' file of `fager score --out`; a folder (an existing one, or a name without
    a suffix) is a usage error naming the file to give, as writing into it would be a guess."""
    out = args.out
    if out is None:
        return DEFAULT_DETAILS
    path = Path(out)
    if path.is_dir() or not path.suffix or str(out).endswith(("/", os.sep)):
        raise CommandError(f"fager score --out {out}: --out takes the records file, not a folder, "
                           f"e.g. --out {path / 'details.jsonl'}")
    return path


def _manifest(args: argparse.Namespace, fager: Any, n_items: int, n_skipped: int) -> dict[str, Any]:
    """The run's manifest: the judge's own (model, backend, revision, ...), the method and its settings."""
    judge = fager.judge
    made_by = judge.manifest() if callable(getattr(judge, "manifest", None)) else {}
    return {**made_by, "method": "fager", "command": "fager score", "items": str(args.items),
            "input_root": str(Path(args.items).resolve().parent),
            "qa": None if args.qa is None else str(args.qa), "pack": args.pack,
            "policy": {"regenerate_threshold": args.regenerate_threshold, "keep_threshold": args.keep_threshold,
                       "inclusive": not args.exclusive},
            "chunk_size": fager.chunk_size, "references": None if args.references is None else str(args.references),
            "max_references": args.max_references, "store": None if args.store is None else str(args.store),
            "text_model": args.text_model, "n_items": n_items, "n_skipped": n_skipped, "cache": args.cache}


def run_refine(args: argparse.Namespace) -> int:
    """Refine the items under a bar over images x evaluations (the first scoring and each round) and
    write the round folders and the before/after report into --out."""
    from .refine import refine, refine_steps
    try:
        ids, prompts, images = read_items(args.items)
        qa_sets = read_qa_csv(args.qa) if args.qa else None
        fager = _pipeline(args, policy_from_args(args))
        quiet_judge(fager.judge)
        quiet_judge(fager.text_judge)
        generator, editor = _image_tools(args)
        with progress_bar(refine_steps(len(ids), args.rounds), "refine", args, unit="img") as bar:
            report = refine(fager, images, prompts, out_dir=args.out or "fager_refine", generator=generator,
                            editor=editor, rounds=args.rounds, qa_sets=qa_sets, ids=ids, seed=args.seed,
                            score_batch=PROGRESS_ITEMS, on_item=bar.update)
    except INPUT_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out or "fager_refine")
    print_summary([{"status": "scored" if item.final_score is not None else "failed", "score": item.final_score}
                   for item in report.items], [out / "report.json", out / "report.md"])
    print(report.markdown().splitlines()[2])
    return 0


def _image_tools(args: argparse.Namespace) -> tuple[Any, Any]:
    """The generator and editor of `refine`, a diffusers one called with --steps (and, generating,
    --height/--width); a module:callable takes no call settings."""
    from vlmjudge.generators import is_module_spec, load_editor, load_generator

    call = generator_call_kwargs(args)
    steps = {k: v for k, v in call.items() if k == "num_inference_steps"}
    generator = editor = None
    if args.generator is not None:
        generator = load_generator(args.generator, **({} if is_module_spec(args.generator) else call))
    if args.editor is not None:
        editor = load_editor(args.editor, **({} if is_module_spec(args.editor) else steps))
    return generator, editor


# ---- commands over saved runs, with no judge ---------------------------------------------------

def configure_saved_run_commands(commands: argparse._SubParsersAction) -> None:
    """Add `abtest` and `rescore` to the `vlmjudge fager` sub-commands."""
    abtest = commands.add_parser("abtest", help="Factual A/B test: factual vs generated scores per prompt",
                                 description="Pairwise accuracy of FAGER scores: factual (reference) images "
                                             "should score at least as high as generated ones.")
    abtest.add_argument("factual", type=Path, help="details.jsonl or summary.csv of the factual images")
    abtest.add_argument("generated", type=Path, help="details.jsonl or summary.csv of the generated images")
    abtest.add_argument("--tie", choices=TIE_MODES, default="full",
                        help="ties count as correct (full, default), wrong (zero) or are left out (skip)")
    abtest.add_argument("--json", action="store_true", help="print the whole report, margins included, as JSON")
    add_policy_flags(abtest)
    abtest.set_defaults(func=run_abtest)

    rescore_cmd = commands.add_parser("rescore", help="re-score a details.jsonl from its per-question answers "
                                                      "(writes a summary.csv to --out or standard output)",
                                      description="Recompute level and overall scores and decisions from the "
                                                  "recorded answers and write a summary.csv.")
    rescore_cmd.add_argument("details", type=Path, help="a details.jsonl from a FAGER run")
    rescore_cmd.add_argument("--out", type=Path, help="summary.csv to write (default: standard output)")
    rescore_cmd.add_argument("--verdicts", type=Path, help="also write the re-scored Verdicts as JSON lines")
    rescore_cmd.add_argument("--check", action="store_true",
                             help="exit 1 if a re-scored record differs from what the file recorded")
    add_policy_flags(rescore_cmd)
    rescore_cmd.set_defaults(func=run_rescore)


def add_policy_flags(parser: argparse.ArgumentParser) -> None:
    """The gating thresholds every command that decides keep/edit/regenerate takes."""
    parser.add_argument("--regenerate-threshold", type=float, default=20.0,
                        help="level-1 score at or below which the image is regenerated (default 20)")
    parser.add_argument("--keep-threshold", type=float, default=95.0,
                        help="overall score at or above which the image is kept (default 95)")
    parser.add_argument("--exclusive", action="store_true",
                        help="use strict comparisons (< regenerate, > keep), the paper's wording")


def policy_from_args(args: argparse.Namespace) -> GatingPolicy:
    """The gating policy the flags of `add_policy_flags` give."""
    return GatingPolicy(regenerate_threshold=args.regenerate_threshold, keep_threshold=args.keep_threshold,
                        inclusive=not args.exclusive)


def run_abtest(args: argparse.Namespace) -> int:
    """Print the A/B report; 2 on unreadable or unpaired input."""
    try:
        factual, generated = ab_scores(args.factual, args.generated, policy_from_args(args))
        report = ab_test(factual, generated, tie=args.tie, strict=True)
    except INPUT_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report.model_dump_json(indent=2) if args.json else report.describe())
    return 0


def run_rescore(args: argparse.Namespace) -> int:
    """Write the re-scored summary; report parse failures; with --check, 1 on any difference."""
    try:
        policy = policy_from_args(args)
        recorded = read_details(args.details)
    except INPUT_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    rescored = [rescore(v, policy) for v in recorded]
    text = format_summary(rescored)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8", newline="")
    if args.verdicts is not None:
        write_verdicts(rescored, args.verdicts)
    failures = sum(v.counts.failed for v in rescored)
    print(f"rescored {len(rescored)} records, {failures} parse failures", file=sys.stderr)
    if not args.check:
        return 0
    differing = [(old, new) for old, new in zip(recorded, rescored) if summary_row(old) != summary_row(new)]
    for old, new in differing:
        print(f"differs: index {old.id}: recorded {summary_row(old)[2:11]} re-scored {summary_row(new)[2:11]}",
              file=sys.stderr)
    print(f"check: {len(recorded) - len(differing)}/{len(recorded)} records reproduced", file=sys.stderr)
    return 1 if differing else 0


def main(argv: list[str] | None = None) -> int:
    """Run the fager commands standalone (`python -m fager.cli`), e.g. where the core CLI is absent."""
    parser = argparse.ArgumentParser(prog="vlmjudge fager", description=__doc__.splitlines()[0])
    configure(parser)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["configure", "main", "run_abtest", "run_refine", "run_rescore", "run_rubric", "run_score"]
