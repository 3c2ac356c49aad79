"""`vlmjudge terravis ...`: score image folders into JSON lines, and report on saved runs.

    vlmjudge terravis score IMAGES_OR_DIR [...] --model MODEL --out results.jsonl
    vlmjudge terravis report results.jsonl [more.jsonl ...] --out report/ [--human ratings.csv]

`score` writes one record per image (its id the path relative to the input root, its file in
`meta.path`) and the run manifest beside them (results.manifest.json), the layout of
`vlmjudge.outputs`. Every judge answer goes to a SQLite cache (default: results.cache.sqlite
beside --out), so a rerun, or a run resumed after a crash, asks the model only what it has not
answered yet.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from vlmjudge.cli.exits import RUN
from vlmjudge.cli.flags import add_judge_flags, add_no_cache_flag, add_on_error_flag, judge_from_args
from vlmjudge.cli.help import EXIT_EPILOG, DefaultsHelpFormatter, describe
from vlmjudge.cli.intake import Failure, Screened, image_items
from vlmjudge.cli.preflight import require_file
from vlmjudge.cli.resume import cache_has_answers, done_in_jsonl, earlier_manifest, same_answers
from vlmjudge.cli.scoring import Outcome, ScoreCommand, partial_output, run_scoring
from vlmjudge.images import ImageInputError, to_pil
from vlmjudge.cli.progress import ItemProgress, add_quiet_flag, quiet_judge
from vlmjudge.cli.report_command import add_dpi_flag
from vlmjudge.cli.summary import print_summary
from vlmjudge.outputs import record_text, write_manifest

from .records import image_meta


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the terravis subcommands to the `vlmjudge terravis` parser (entry point `vlmjudge.commands`)."""
    commands = parser.add_subparsers(dest="terravis_command", required=True)
    score = commands.add_parser("score", help="score images (files or folders) into a JSONL of records",
                                description="Eligibility, 18 violation checks and severities for every image; "
                                            "one JSON record per image. An image below the recommended "
                                            "resolution is scored, its record's meta.resolution_note says so.",
                                epilog=EXIT_EPILOG, formatter_class=DefaultsHelpFormatter)
    score.add_argument("inputs", nargs="+", metavar="IMAGES_OR_DIR", help="image files or folders (recursive)")
    add_judge_flags(score)
    describe(score, "--out", "the results JSONL to write, one record per image; the manifest goes "
                             "beside it, results.jsonl -> results.manifest.json", required=True)
    describe(score, "--cache", "SQLite file of the judge's answers; a rerun resumes from it (default: beside "
                               "--out, results.jsonl -> results.cache.sqlite; --no-cache for none)")
    add_no_cache_flag(score)
    score.add_argument("--variant", default="workflow", choices=("workflow", "holistic", "gptscore"),
                       help="workflow: the staged TerraVis judge (eligibility, then 18 violation checks with "
                            "severities; the score is exp(-lam (N_major + alpha N_minor))); holistic: TerraVis-H, "
                            "one call with the whole taxonomy giving a 1-5 rating or N/A; gptscore: one generic "
                            "1-5 quality rating; both single-call ratings are scored (rating - 1) / 4")
    score.add_argument("--decision", default="choice", choices=("choice", "generate"),
                       help="how each decision is read: choice, the options' probabilities after the answer "
                            "prefix; generate, greedy generation with the first token restricted to the options "
                            "(for backends or servers without log-probabilities); every variant, TerraVis-H and "
                            "GPTScore included; the manifest's decoding.decision records it")
    score.add_argument("--lam", type=float, default=1.0,
                       help="lambda of S = exp(-lam (N_major + alpha N_minor)), workflow variant")
    score.add_argument("--alpha", type=float, default=0.5, help="weight of a minor violation (0..1), workflow variant")
    score.add_argument("--pack", default=None,
                       help="prompt pack: a shipped name or a JSON file (default: the shipped default pack)")
    score.add_argument("--t2i-model", default=None,
                       help="name of the text-to-image model that made these images, the record's 'model' "
                            "(default: none; reports then group by folder)")
    score.add_argument("--chunk-size", type=int, default=16,
                       help="images per stage-batched judge run; records are written as each chunk finishes")
    add_quiet_flag(score)
    add_on_error_flag(score)
    score.set_defaults(func=run_score)

    report = commands.add_parser("report", help="rankings, plots, analyses and an HTML page from saved runs",
                                 description="Per-model mean scores and ranking, violation shares by level and "
                                             "type, a score histogram, the analyses over saved records, and the "
                                             "worst images with their evidence.")
    report.add_argument("results", nargs="+", type=Path, help="JSONL files written by `terravis score` or "
                                                              "`python -m vlmjudge.distributed terravis`")
    report.add_argument("--out", type=Path, required=True, help="folder to write the report into")
    report.add_argument("--group-by", choices=("auto", "field", "folder"), default="auto",
                        help="T2I model of an image: its record's 'model' field, its parent folder name, or "
                             "the field where present, else the folder (auto, default)")
    report.add_argument("--human", type=Path, default=None,
                        help="CSV of human ratings: image_id, rating (1-5, empty or NA for N/A; one row per "
                             "annotator or their mean), optional has_violation and style columns")
    report.add_argument("--violation-below", type=float, default=None, metavar="RATING",
                        help="label an annotator's image as having a violation when its rating is below RATING "
                             "(e.g. 5), for detection precision/recall; replaces any has_violation column")
    report.add_argument("--classify-styles", nargs="?", const="siglip", default=None, metavar="MODEL",
                        help="split agreement into photorealistic / stylized images with a zero-shot SigLIP "
                             "classifier (the paper's; default google/siglip-so400m-patch14-384, or a local "
                             "SigLIP folder) over the images in the records' meta.path; replaces any style column")
    report.add_argument("--worst", type=int, default=20, help="how many of the lowest-scored images to show")
    add_dpi_flag(report)
    report.set_defaults(func=run_report)


# -- score ---------------------------------------------------------------------------------
#: Manifest fields that decide the judge's answers: a rerun differing in one asks anew (lam and alpha do not).
ANSWER_KEYS = ("method_version", "variant", "backend", "model", "revision", "dtype", "pack_sha256", "decoding")


def run_score(args: argparse.Namespace) -> int:
    """Check every image, then score the readable ones, writing records as chunks finish; print
    counts and model calls; the exit status says whether every image got a record (--help)."""
    if args.chunk_size < 1:
        print("error: --chunk-size must be >= 1", file=sys.stderr)
        return 2
    return run_scoring(_TerraVisScore(args, Path(args.out)))


class _TerraVisScore(ScoreCommand):
    """`terravis score`: one record per image, written as each chunk of images finishes."""
    build_errors = (OSError, ValueError, TypeError)
    score_errors = (ValueError,)  # a pack or judge that cannot take these requests: nothing is kept

    def read(self) -> list[tuple[Path]]:
        """The images given, each item one image."""
        self.images = image_items(self.args.inputs)
        return [(path,) for _, path in self.images]

    def build(self, screened: Screened) -> None:
        """The judge (one progress bar, over images, is ours), TerraVis over it, and the manifest."""
        from .core import TerraVis

        args = self.args
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.judge = quiet_judge(judge_from_args(args))
        self.tv = TerraVis(self.judge, variant=args.variant, lam=args.lam, alpha=args.alpha, pack=args.pack,
                           decision=args.decision)
        self.manifest = {**self.tv.manifest(), "command": "terravis score", "n_images": len(screened.kept),
                         "n_skipped": len(screened.failures), "inputs": list(args.inputs), "cache": args.cache,
                         "chunk_size": args.chunk_size, "t2i_model": args.t2i_model}

    def done_before(self, screened: Screened) -> int | None:
        """A rerun of the same questions: the earlier output's finished records are in the cache."""
        if not (cache_has_answers(self.args.cache) and same_answers(earlier_manifest(self.out), self.manifest,
                                                                    ANSWER_KEYS)):
            return None
        return done_in_jsonl(self.out, {self.images[i][0] for i in screened.kept}, "id",
                             lambda r: r.get("status") in ("scored", "not_applicable"))

    def partial_manifest(self) -> dict[str, Any]:
        """The run's manifest, as written beside the records an interrupted run keeps."""
        return self.current_manifest()

    def current_manifest(self) -> dict[str, Any]:
        """The manifest with the judge's counters as the run has left them (failed and malformed
        requests, answers refused), not as they were when the judge was built."""
        return {**self.manifest, **self.tv.manifest()}

    def score(self, screened: Screened) -> tuple[list[dict[str, Any]], list[Failure]]:
        """Score chunk by chunk into the records file: each record's status and score, and the images
        without a result."""
        args, images = self.args, self.images
        failures: list[Failure] = []
        written: list[dict[str, Any]] = []
        bar = ItemProgress(len(screened.kept), "terravis", args, unit="img", judges=[self.judge])
        try:
            with partial_output(self.out) as fh:
                for start in range(0, len(screened.kept), args.chunk_size):
                    chunk, pils = [], []
                    for index in screened.kept[start:start + args.chunk_size]:
                        try:  # decoded again here, so the pre-load check holds no images in memory
                            pils.append(to_pil(images[index][1], index=index))
                        except ImageInputError as error:  # the file changed since the check
                            failures.append(Failure(index, str(images[index][1]), error.reason, bad_input=True))
                            continue
                        chunk.append(index)
                    meta = [image_meta(images[i][1], args.t2i_model, screened.notes.get(i)) for i in chunk]
                    bar.start(len(chunk))
                    records = self.tv.score(pils, ids=[images[i][0] for i in chunk], meta=meta) if chunk else []
                    for index, record in zip(chunk, records):
                        fh.write(record_text(record.to_json(), f"{self.out} record {record.id}") + "\n")
                        RUN.saved += 1
                        written.append({"status": record.status, "score": record.score})
                        if record.status == "failed":  # no answer from the judge: this image has no result
                            reason = "; ".join(record.errors) or "the judge gave no answer"
                            failures.append(Failure(index, str(images[index][1]), reason))
                    fh.flush()
                    bar.advance(len(chunk))
        finally:
            bar.close()
        return written, failures

    def summarize(self, screened: Screened, scored: tuple[list[dict[str, Any]], list[Failure]]) -> Outcome:
        """Write the manifest; print the shared summary (counts, mean score with its 95% interval, the
        files) and the model calls."""
        written, failures = scored
        manifest_file = write_manifest(self.out, self.current_manifest())
        n_bad = len(screened.failures) + sum(failure.bad_input for failure in failures)
        print_summary(written, [self.out, manifest_file], skipped=n_bad)
        stats = self.judge.stats
        print(f"model calls: {stats.model_calls} (answers from an earlier run: {stats.resumed_from_cache}, "
              f"reused within this run: {stats.reused_within_run})")
        return Outcome(sum(r["status"] != "failed" for r in written), failures)


# -- report --------------------------------------------------------------------------------
def run_report(args: argparse.Namespace) -> int:
    """Write the report folder; 2 on unreadable input."""
    from .report import ReportError, report_notes, write_report

    for results in args.results:
        require_file(results, "the results JSONL files `terravis score --out` writes (one JSON record per image, "
                              "e.g. results.jsonl)")
    classifier = None
    if args.classify_styles is not None:
        if args.human is None:
            print("error: --classify-styles splits the agreement with human ratings: give --human", file=sys.stderr)
            return 2
        from .style import DEFAULT_MODEL, SigLIPStyleClassifier
        classifier = SigLIPStyleClassifier(DEFAULT_MODEL if args.classify_styles == "siglip" else args.classify_styles)
    try:
        written = write_report(args.results, args.out, group_by=args.group_by, human=args.human, worst=args.worst,
                               violation_below=args.violation_below, style_classifier=classifier, dpi=args.dpi)
    except (ReportError, OSError, ValueError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    for note in report_notes(written[0]):
        print(f"note: {note}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the terravis commands standalone (`python -m terravis.cli`)."""
    parser = argparse.ArgumentParser(prog="vlmjudge terravis", description=__doc__.splitlines()[0])
    configure(parser)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["configure", "main", "run_score", "run_report"]
