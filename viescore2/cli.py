r"""``vlmjudge viescore2 ...``: judge images (``score``), and evaluate saved judge outputs against
ground truth (``evaluate``).

``score --help`` prints `SCORE_HELP` and ``evaluate --help`` `EVALUATE_HELP`; ``score``'s
records (``id``, ``text``, scores, grids, explanation, status) are also a predictions file for
``evaluate``. docs/methods/viescore2.md, "The command line", gives the predictions and references
formats and what the result JSON holds.
"""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from vlmjudge.cli.exits import RUN
from vlmjudge.cli.flags import add_judge_flags, add_no_cache_flag, add_on_error_flag, judge_from_args
from vlmjudge.cli.help import EXIT_EPILOG, RawDefaultsHelpFormatter, describe
from vlmjudge.cli.intake import Failure, Screened, image_items
from vlmjudge.cli.resume import cache_has_answers, done_in_jsonl, earlier_manifest, same_answers
from vlmjudge.cli.scoring import Outcome, ScoreCommand, partial_output, run_scoring
from vlmjudge.cli.progress import ItemProgress, add_quiet_flag, quiet_judge
from vlmjudge.cli.summary import print_summary
from vlmjudge.outputs import record_text, with_resolution_note, write_manifest

from .evaluation import evaluate_suite, example_rows
from .grid import DEFAULT_N
from .pack import pack_from_file
from .report import format_table, score_extras
from .saved_runs import lines_by_id, load_pairs, load_prompts

#: `score` runs this many judge batches at a time, writing their records before the next.
SCORE_CHUNK_BATCHES = 4


def run_evaluate(args: argparse.Namespace) -> int:
    """Pair the predictions with the references by id, print the suite's metrics, write them and
    each example's result with --out, and draw the overlays with --overlays; 2 on bad input."""
    if (args.overlays is None) != (args.images is None):
        print("vlmjudge viescore2 evaluate: --overlays and --images go together", file=sys.stderr)
        return 2
    try:
        ids, texts, refs = load_pairs(args.predictions, args.references, n=args.grid_size)
    except (OSError, ValueError) as err:
        print(f"vlmjudge viescore2 evaluate: error: {err}", file=sys.stderr)
        return 2
    metrics = evaluate_suite(texts, refs, n=args.grid_size)
    print(format_table(metrics))
    if args.out:
        examples = example_rows(ids, texts, refs, n=args.grid_size)
        Path(args.out).write_text(json.dumps({"metrics": metrics, "examples": examples}, indent=2) + "\n",
                                  encoding="utf-8")
        print(f"wrote {args.out}")
    if args.overlays:
        from .figures import draw_evaluation_overlays

        lines = {key: line for key, (_, line) in lines_by_id(args.references, "reference").items()}
        written, skipped = draw_evaluation_overlays(Path(args.overlays), Path(args.images), ids, texts, refs,
                                                    lines, args.grid_size)
        for reason in skipped:
            print(reason, file=sys.stderr)
        print(f"wrote {written} overlays to {args.overlays}")
    return 0


SCORE_HELP = """Judge generated images with VIEScore2 and write one JSON record per image.

IMAGES are image files or folders (searched recursively, sorted by name); an image's id is its
path relative to the input root (the folder given, or the folder holding all inputs), suffix
included, e.g. sub/cat.png. Every image is checked before the model loads: with --on-error
skip (the default) an unreadable one (truncated, not an image, empty, an aspect ratio over 200:1)
is listed as "path: reason", written to <out>.failures.jsonl and left out, and the rest are
scored; with --on-error raise the first one stops the run.

--prompts is either a text file with one prompt per line, in the order of IMAGES, or a JSONL
file of {"id": ..., "prompt": ..., "conditioning": [paths]} objects matched by id, or by
the id without its suffix as earlier releases named images (conditioning paths are relative
to the JSONL file; optional).

--out results.jsonl gets the records (id, status, score, error, then prompt, read_status,
scores, grid or artifact and misalign, explanation, raw text, finish reason; and
resolution_note for an image under the recommended 64 px, which is scored all the same; see
docs/outputs.md); results.manifest.json beside it records the
judge, configuration, instructions, grammar and decoding, and the judge's answers are cached in
results.cache.sqlite beside it (--cache FILE elsewhere, --no-cache for none), so a rerun
resumes. --overlays DIR writes <id without suffix>.png with the predicted cells drawn on each
image whose grid was read.
"""


EVALUATE_HELP = """Evaluate saved judge outputs against ground-truth grids and scores.

PREDICTIONS is a JSONL file, one object per line: {"id": "img-1", "text": "<judge output>"}, the
text being the judge's full answer (score lines, then grid lines). The results JSONL that
"viescore2 score" writes is such a file.

--references is a JSONL file, one object per line, for example:

    {"id": "img-1", "grid": "r5: 8,9!\\nr6: 9", "score": 6.5}
    {"id": "img-2", "artifact": "none", "misalign": "r2: 3", "pq": 8, "sc": 4, "image": "img-2.png"}

grid is one grid body in the text format (rows, or none); artifact and misalign are the two
category bodies and come together; a grid field that is absent or null means the example has
no localization ground truth. score, pq and sc are 0-10 targets, each optional. image
(optional) is the image file relative to --images; without it the overlay looks for the id
itself (an image's relative path, as "viescore2 score" names it) or <id>.png, .jpg, ... there.

The table printed (and --out's "metrics") holds every grid and score metric of the suite;
--out's "examples" holds each example's grid status, scores and grid IoU.
"""


#: Manifest fields that decide the judge's answers: a rerun differing in one asks anew.
ANSWER_KEYS = ("backend", "model", "revision", "dtype", "fields", "grid_size", "pack_sha256", "grammar_sha256",
               "decoding")


def run_score(args: argparse.Namespace) -> int:
    """Judge the images into the records file, then print the summary (and draw the overlays)."""
    return run_scoring(_VIEScore2Score(args, Path(args.out)))


class _VIEScore2Score(ScoreCommand):
    """`viescore2 score`: one record per image, written a few judge batches at a time."""
    error_prefix = "vlmjudge viescore2 score: error: "
    read_errors = build_errors = (OSError, ValueError, KeyError)

    def read(self) -> list[tuple[Path, ...]]:
        """The images, their prompts and conditioning images; an item is its conditioning images,
        then the image, as the request sends them (an item fails on any bad one)."""
        items = image_items(self.args.images)
        self.files, self.ids = [path for _, path in items], [item for item, _ in items]
        self.prompts, self.conditioning = load_prompts(self.args.prompts, self.ids)
        self.pack = pack_from_file(self.args.pack)
        return [(*conds, image) for image, conds in zip(self.files, self.conditioning)]

    def build(self, screened: Screened) -> None:
        """VIEScore2 over the judge of the shared flags."""
        from .core import VIEScore2

        args = self.args
        self.scorer = VIEScore2(quiet_judge(judge_from_args(args)), fields=args.fields, grid_size=args.grid_size, pack=self.pack,
                                constrain=not args.no_grammar)

    def done_before(self, screened: Screened) -> int | None:
        """A rerun of the same questions: the earlier output's answered images are in the cache."""
        if not (cache_has_answers(self.args.cache) and same_answers(earlier_manifest(self.out),
                                                                    self.scorer.manifest(), ANSWER_KEYS)):
            return None
        return done_in_jsonl(self.out, {self.ids[i] for i in screened.kept}, "id",
                             lambda r: r.get("read_status") != "error")

    def partial_manifest(self) -> dict[str, Any]:
        """The judge's and method's manifest, as written beside the records an interrupted run keeps."""
        return {**self.scorer.manifest(), "command": "viescore2 score", "cache": self.args.cache}

    def score(self, screened: Screened) -> tuple[list, Counter, dict, list[Failure]]:
        """Score a few batches at a time into the records file: the records, the counts, the
        judge's manifest and the images without a result."""
        args, files, out = self.args, self.files, self.out
        out.parent.mkdir(parents=True, exist_ok=True)
        failures, records, counts, manifest = [], [], Counter(), {}
        step = max(args.batch_size, 1) * SCORE_CHUNK_BATCHES
        bar = ItemProgress(len(screened.kept), "viescore2", args, unit="img", judges=[self.scorer.judge])
        with bar, partial_output(out) as fh:
            for start in range(0, len(screened.kept), step):
                chunk = screened.kept[start:start + step]
                bar.start(len(chunk))
                result = self.scorer.run([str(files[i]) for i in chunk], [self.prompts[i] for i in chunk],
                                         [[str(c) for c in self.conditioning[i]] for i in chunk],
                                         [self.ids[i] for i in chunk])
                counts.update(result.counts)
                manifest = result.manifest
                for index, record in zip(chunk, result.records):
                    line = with_resolution_note(record.to_json(), screened.notes.get(index))
                    fh.write(record_text(line, f"{out} record {self.ids[index]}") + "\n")
                    RUN.saved += 1
                    if record.read_status == "error":  # the judge gave no answer: no result for this image
                        failures.append(Failure(index, str(files[index]), "the judge gave no answer (finish "
                                                                          f"reason {record.finish_reason})"))
                fh.flush()
                bar.advance(len(chunk))
                records += result.records
        return records, counts, manifest, failures

    def summarize(self, screened: Screened, scored: tuple[list, Counter, dict, list[Failure]]) -> Outcome:
        """Write the manifest and draw the overlays; print the shared summary, then the PQ and SC
        means (where asked for, each with its 95% interval and n) and the parse failures."""
        args, out = self.args, self.out
        records, counts, manifest, failures = scored
        manifest_path = write_manifest(out, {**manifest, "command": "viescore2 score", "counts": dict(counts),
                                             "skipped": len(screened.failures), "cache": args.cache,
                                             "batch_size": args.batch_size, "constrain": not args.no_grammar,
                                             "inputs": list(args.images)})
        written = [out, manifest_path]
        if args.overlays:
            from .figures import draw_record_overlays

            written.append(draw_record_overlays(Path(args.overlays), records))
        print_summary([{"status": r.status, "score": r.overall} for r in records], written,
                      skipped=len(screened.failures))
        print(format_table(score_extras(records, counts.get("parse_failures", 0))))
        return Outcome(sum(r.read_status != "error" for r in records), failures)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the viescore2 sub-commands to the ``vlmjudge viescore2`` parser."""
    sub = parser.add_subparsers(dest="viescore2_command", required=True)
    sc = sub.add_parser("score", help="judge images: scores, defect grids and explanations as JSONL",
                        description=SCORE_HELP, epilog=textwrap.fill(EXIT_EPILOG, 92),  # raw: wrap it here
                        formatter_class=RawDefaultsHelpFormatter)
    sc.add_argument("images", nargs="+", help="image files or folders")
    sc.add_argument("--prompts", required=True, help="text file (one prompt per line) or JSONL {id, prompt, conditioning}")
    sc.add_argument("--fields", default="pq_sc+split", help="configuration: overall|pq_sc, grid|split, marks, "
                                                           "joined by '+' (default pq_sc+split)")
    sc.add_argument("--grid-size", type=int, default=DEFAULT_N, help="N of the N x N grid (default 16)")
    sc.add_argument("--pack", default=None, help="instruction pack: a JSON file {version, templates, system} or a "
                                                 "text file with one template (the instructions a checkpoint was "
                                                 "trained with; default: the shipped instructions)")
    sc.add_argument("--no-grammar", action="store_true", help="do not constrain the output (tolerant parsing only)")
    sc.add_argument("--overlays", default=None,
                    help="folder for PNG overlays of the predicted cells (default: no overlays)")
    add_judge_flags(sc)
    describe(sc, "--out", "the results JSONL to write; the manifest goes beside it", required=True)
    describe(sc, "--cache", "SQLite file of the judge's answers; a rerun resumes from it (default: beside --out, "
                            "results.jsonl -> results.cache.sqlite)")
    add_no_cache_flag(sc)
    add_on_error_flag(sc)
    add_quiet_flag(sc)
    sc.set_defaults(func=run_score)
    ev = sub.add_parser("evaluate", help="metrics of saved judge outputs against ground-truth grids and scores",
                        description=EVALUATE_HELP, formatter_class=RawDefaultsHelpFormatter)
    ev.add_argument("predictions", help="JSONL of {id, text}")
    ev.add_argument("--references", required=True, help="JSONL of {id, grid | artifact+misalign, score, pq, sc}")
    ev.add_argument("--out", default=None,
                    help="write metrics and per-example results as JSON (default: the table only)")
    ev.add_argument("--grid-size", type=int, default=DEFAULT_N, help="N of the N x N grid (default 16)")
    ev.add_argument("--overlays", default=None, help="folder for PNG overlays (needs --images; default: none)")
    ev.add_argument("--images", default=None,
                    help="folder holding the judged images (needs --overlays; default: none)")
    ev.set_defaults(func=run_evaluate)
    from .report import configure_report  # the report of a score run
    configure_report(sub)
