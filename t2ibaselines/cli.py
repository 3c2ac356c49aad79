"""`vlmjudge <baseline> score IMAGES --prompts FILE --out records.jsonl`, written once for every baseline.

Each baseline registers this module's `configure` under its own name in `vlmjudge.commands`;
`configure` reads which baseline it serves from the parser's `judge_method` default and builds
`score` from that baseline's `MethodSpec`: its inputs (image, prompt, reference) say what is read,
its `config` which `--method-option KEY=VALUE` it takes, its `default_model` whether a judge
loads without `--model` (a method with none, a trained scorer, gets one only when `--model` is
given). The steps are the shared score command's (`vlmjudge.cli.scoring.run_scoring`).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from vlmjudge.cli.exits import RUN
from vlmjudge.cli.flags import add_judge_flags, add_no_cache_flag, add_on_error_flag, check_judge, judge_from_args
from vlmjudge.cli.generator_flags import positive_int
from vlmjudge.cli.help import EXIT_EPILOG, DefaultsHelpFormatter, describe
from vlmjudge.cli.intake import Failure, Screened, image_items
from vlmjudge.cli.progress import ItemProgress, add_quiet_flag, quiet_judge
from vlmjudge.cli.resume import cache_has_answers, done_in_jsonl, earlier_manifest, same_answers
from vlmjudge.cli.scoring import Outcome, ScoreCommand, partial_output, run_scoring
from vlmjudge.cli.summary import print_summary
from vlmjudge.images import ImageInputError, to_pil
from vlmjudge.outputs import record_text, with_resolution_note, write_manifest
from vlmjudge.registry import MethodSpec, get_method

from .intake import prompts_for
from .method_options import method_options

#: The columns this command can fill: the images, and the prompts file's prompt and reference.
READABLE = ("image", "prompt", "reference")
#: Manifest fields that decide the judge's answers: a rerun differing in one asks anew.
ANSWER_KEYS = ("method", "method_version", "backend", "model", "revision", "dtype", "pack_sha256", "config")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add `score` to the `vlmjudge <baseline>` parser (entry point `vlmjudge.commands`)."""
    name = parser.get_default("judge_method")
    try:
        spec = get_method(name)
    except Exception as error:  # a plugin's spec that cannot load: `vlmjudge <name>` says why, in one line
        raise ImportError(f"its method spec cannot be loaded ({type(error).__name__}: {error})") from None
    commands = parser.add_subparsers(dest=f"{name}_command", required=True)
    needs_prompts = bool({"prompt", "reference"} & set(spec.inputs))
    score = commands.add_parser(
        "score", help=f"score images with {name} into a JSONL of records", epilog=EXIT_EPILOG,
        formatter_class=DefaultsHelpFormatter,
        description=f"{spec.description} One JSON record per image (id, status, score, then {name}'s own fields); "
                    "the manifest and the answer cache go beside --out. docs/baselines.md has the details.")
    score.add_argument("images", nargs="+", metavar="IMAGES_OR_DIR", help="image files or folders (recursive)")
    score.add_argument("--prompts", required=needs_prompts, default=None,
                       help="the prompts: JSONL or CSV with id, prompt (optional category, reference: an image "
                            "path relative to the file), TIFA's text inputs JSON, or a .txt with one prompt per "
                            "line in the images' order; an image takes the prompt of its id, of its id without "
                            "suffix, of its file stem or of its folder's name"
                            + ("" if needs_prompts else f" (default: none; {name} does not read prompts)"))
    keys = ", ".join(f"{key} (default {value!r})" for key, value in spec.config.items()) or "none"
    score.add_argument("--method-option", action="append", default=[], metavar="KEY=VALUE",
                       help=f"one of {name}'s own settings, repeatable; a JSON literal or text. Keys: {keys}")
    score.add_argument("--chunk-size", type=positive_int, default=16,
                       help="images per scoring call; records are written as each chunk finishes")
    add_judge_flags(score)
    describe(score, "--model", "the judge: a Hub id, a local checkpoint folder, a server's model name, or a replay "
                               "JSONL (default: " + (spec.default_model or "none; no judge is loaded") + ")")
    describe(score, "--out", "the results JSONL to write, one record per image; the manifest goes beside it, "
                             "results.jsonl -> results.manifest.json", required=True)
    describe(score, "--cache", "SQLite file of the judge's answers; a rerun resumes from it (default: beside --out, "
                               "results.jsonl -> results.cache.sqlite; --no-cache for none)")
    add_no_cache_flag(score)
    add_on_error_flag(score)
    add_quiet_flag(score)
    score.set_defaults(func=run_score)


def run_score(args: argparse.Namespace) -> int:
    """Score the images with the baseline the sub-command is named after; the exit status as --help says."""
    return run_scoring(BaselineScore(args, Path(args.out), get_method(args.judge_method)))


class BaselineScore(ScoreCommand):
    """`<baseline> score`: one record per image, written as each chunk of images finishes."""
    build_errors = (OSError, ValueError, TypeError)
    score_errors = (ValueError,)  # a pack or judge that cannot take these requests: nothing is kept

    def __init__(self, args: argparse.Namespace, out: Path, spec: MethodSpec) -> None:
        super().__init__(args, out)
        self.spec = spec
        self.error_prefix = f"vlmjudge {spec.name} score: error: "
        self.uses_judge = spec.default_model is not None or args.model is not None
        self.judge: Any = None

    def refuse(self, error: BaseException) -> int:
        """A step's expected failure on one line: a pack's validation error by its first problem."""
        from pydantic import ValidationError

        if isinstance(error, ValidationError):
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            error = ValueError(f"{error.title}: {where + ': ' if where else ''}"
                               f"{first['msg'].removeprefix('Value error, ')}")
        lines = str(error).strip().splitlines()
        return super().refuse(ValueError(lines[0] if lines else type(error).__name__))

    def _uses(self, column: str) -> bool:
        return column in self.spec.inputs or column in self.spec.optional_inputs

    def read(self) -> list[tuple[Path, ...]]:
        """The images, their prompt rows and the method's options; an item is its reference image
        (where the method compares with one), then the image."""
        spec, args = self.spec, self.args
        unreadable = [column for column in spec.inputs if column not in READABLE]
        if unreadable:
            raise ValueError(f"{spec.name} needs the columns {unreadable}, which this command cannot read")
        self.options = method_options(args.method_option, spec)
        items = image_items(args.images)
        self.ids, self.files = [item for item, _ in items], [path for _, path in items]
        self.rows = prompts_for(args.prompts, self.ids) if args.prompts else None
        if "reference" in spec.inputs:
            lacking = [i for i, row in zip(self.ids, self.rows) if row.reference is None]
            if lacking:
                raise ValueError(f"--prompts {args.prompts}: no reference image for {', '.join(lacking[:5])} "
                                 f"({spec.name} compares each image with one)")
        with_reference = self._uses("reference") and self.rows is not None
        return [((row.reference,) if with_reference and row.reference else ()) + (path,)
                for path, row in zip(self.files, self.rows or [None] * len(self.files))]

    def check(self) -> None:
        """The judge flags, where a judge loads (a method without a default model and no --model: none)."""
        if self.uses_judge:
            check_judge(self.args, self.spec.default_model)

    def cache_home(self) -> Path | None:
        return self.out if self.uses_judge else None

    def build(self, screened: Screened) -> None:
        """The judge (its progress bar off: ours counts images), the method over it, and the manifest."""
        args, spec = self.args, self.spec
        self.out.parent.mkdir(parents=True, exist_ok=True)
        if self.uses_judge:
            self.judge = quiet_judge(judge_from_args(args, spec.default_model))
        elif args.device is not None and "device" in spec.config:  # a trained scorer: --device is its own
            self.options.setdefault("device", args.device)
        self.scorer = spec.build(self.judge, **{**spec.config, **self.options})
        made_by = self.scorer.manifest() if hasattr(self.scorer, "manifest") else {}
        self.manifest = {**made_by, "method": spec.name, "command": f"{spec.name} score", "config": self.options,
                         "n_images": len(screened.kept), "n_skipped": len(screened.failures),
                         "inputs": list(args.images), "prompts": args.prompts, "cache": args.cache,
                         "chunk_size": args.chunk_size}

    def done_before(self, screened: Screened) -> int | None:
        """A rerun of the same questions: the earlier output's finished records are in the cache."""
        if not (self.uses_judge and cache_has_answers(self.args.cache)
                and same_answers(earlier_manifest(self.out), self.manifest, ANSWER_KEYS)):
            return None
        return done_in_jsonl(self.out, {self.ids[i] for i in screened.kept}, "id",
                             lambda r: r.get("status") in ("scored", "not_applicable"))

    def partial_manifest(self) -> dict[str, Any]:
        return self.manifest

    def _batch(self, chunk: list[int], failures: list[Failure]) -> tuple[list[int], dict[str, list[Any]]]:
        """The chunk's readable items as the method's columns (decoded again here, so the pre-load
        check holds no images in memory; a file that changed since is a failure)."""
        kept, columns = [], {"image": [], "prompt": [], "reference": [], "id": []}
        for index in chunk:
            row = self.rows[index] if self.rows is not None else None
            try:
                image = to_pil(self.files[index], index=index)
                reference = to_pil(row.reference, index=index) if row and row.reference and self._uses(
                    "reference") else None
            except ImageInputError as error:
                failures.append(Failure(index, str(self.files[index]), error.reason, bad_input=True))
                continue
            kept.append(index)
            columns["image"].append(image)
            columns["prompt"].append(row.prompt if row else None)
            columns["reference"].append(reference)
            columns["id"].append(self.ids[index])
        given = {"image", "id"} | ({"prompt", "reference"} if self.rows is not None else set())
        return kept, {c: v for c, v in columns.items() if c in given and (c == "image" or self._uses(c))}

    def score(self, screened: Screened) -> tuple[list[dict[str, Any]], list[Failure]]:
        """Score chunk by chunk into the records file: each record's status and score, and the images
        without a result."""
        failures: list[Failure] = []
        written: list[dict[str, Any]] = []
        bar = ItemProgress(len(screened.kept), self.spec.name, self.args, unit="img", judges=[self.judge])
        with bar, partial_output(self.out) as handle:
            for start in range(0, len(screened.kept), self.args.chunk_size):
                chunk, batch = self._batch(screened.kept[start:start + self.args.chunk_size], failures)
                bar.start(len(chunk))
                records = self.scorer.score_batch(batch) if chunk else []
                if len(records) != len(chunk):
                    raise RuntimeError(f"{self.spec.name} returned {len(records)} records for {len(chunk)} images")
                for index, record in zip(chunk, records):
                    line = self._line(index, record.to_json(), screened.notes.get(index))
                    handle.write(record_text(line, f"{self.out} record {self.ids[index]}") + "\n")
                    RUN.saved += 1
                    written.append({"status": line["status"], "score": line["score"]})
                    if line["status"] == "failed":
                        failures.append(Failure(index, str(self.files[index]), _reason(line)))
                handle.flush()
                bar.advance(len(chunk))
        return written, failures

    def _line(self, index: int, record: dict[str, Any], note: str | None) -> dict[str, Any]:
        """The record with `meta`: the image's path, and the prompt row's category and reference."""
        meta = dict(record.get("meta") or {})
        meta["path"] = str(self.files[index].resolve())
        row = self.rows[index] if self.rows is not None else None
        if row is not None and row.category is not None:
            meta["category"] = row.category
        if row is not None and row.reference is not None:
            meta["reference"] = str(row.reference.resolve())
        return with_resolution_note({**record, "meta": meta}, note)

    def summarize(self, screened: Screened, scored: tuple[list[dict[str, Any]], list[Failure]]) -> Outcome:
        """Write the manifest; print the shared summary and, with a judge, its model calls."""
        written, failures = scored
        manifest_file = write_manifest(self.out, self.manifest)
        n_bad = len(screened.failures) + sum(failure.bad_input for failure in failures)
        print_summary(written, [self.out, manifest_file], skipped=n_bad)
        if self.judge is not None:
            stats = self.judge.stats
            print(f"model calls: {stats.model_calls} (answers from an earlier run: {stats.resumed_from_cache}, "
                  f"reused within this run: {stats.reused_within_run})")
        return Outcome(sum(r["status"] != "failed" for r in written), failures)


def _reason(record: dict[str, Any]) -> str:
    """Why a failed record has no score, from its `error` or `errors` field."""
    errors = record.get("errors") or ([record["error"]] if record.get("error") else [])
    return "; ".join(str(e) for e in errors) or "the method gave no score"


__all__ = ["ANSWER_KEYS", "BaselineScore", "configure", "run_score"]
