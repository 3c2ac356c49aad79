"""`python -m vlmjudge.distributed METHOD --input ... --output ...`: score a JSONL file or an
image folder with any registered method, one shard per process of an `accelerate launch` /
`torchrun` run (or in one plain process); process 0 writes the records in input order, with the
layout of every scoring command (`vlmjudge.outputs`): the manifest beside them
(records.jsonl -> records.manifest.json) and, unless --no-cache or a cache in --judge-kwargs, the
judge's answers in records.cache.sqlite beside them, shared by all processes.

Images are checked before any judge loads, with the bad-input policy of the `vlmjudge`
judging commands (`--on-error`, `<output>.failures.jsonl`, the exit statuses in --help)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..distributed.common import ID_COLUMN, resolve_method
from .errors import CommandError
from .exits import EXIT_NONE_SCORED, RUN, exit_status
from .flags import add_on_error_flag
from .help import EXIT_EPILOG
from .intake import image_items, looks_like_path
from .summary import print_summary
from ..outputs import default_cache_path, with_resolution_note, write_manifest, write_records


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m vlmjudge.distributed",
        description="Score a dataset with a vlmjudge method across the processes of an accelerate/torchrun "
                    "launch: each process loads its own judge and scores a contiguous shard.",
        epilog="Example: accelerate launch --num_processes 4 -m vlmjudge.distributed terravis "
               "--input images/ --output records.jsonl --model Qwen/Qwen3-VL-8B-Instruct. "
               f"Images are checked before the judge loads (columns {', '.join(IMAGE_COLUMNS)}); a record of an "
               "image under the recommended 64 px gets a 'resolution_note', where the method's own command puts it "
               "(terravis: in meta, fager: in provenance, else at the top level). " + EXIT_EPILOG)
    parser.add_argument("method", help="a registered method name (terravis, viescore2, ...) or module:SPEC")
    parser.add_argument("--input", required=True,
                        help="a JSONL file (one object of columns per row; images as paths) or a folder of images "
                             "(searched recursively; column 'image', ids the paths relative to the folder)")
    parser.add_argument("--output", required=True, help="JSONL file of records, in input order (written by process 0)")
    parser.add_argument("--model", default=None, help="judge model: Hub id, local folder or server model name "
                                                      "(default: the method's default model)")
    parser.add_argument("--backend", default="transformers",
                        help="transformers (default), openai, replay or module:Class")
    parser.add_argument("--judge-kwargs", default="{}", type=_json_object,
                        help='JSON object of load_judge keywords, e.g. \'{"dtype": "bfloat16", "batch_size": 16}\'')
    parser.add_argument("--config", default="{}", type=_json_object,
                        help="JSON object of the method's build keywords (variant, pack, ...)")
    parser.add_argument("--chunk-size", type=int, default=None,
                        help="rows per score_batch call within a shard (default: the whole shard at once)")
    parser.add_argument("--no-cache", action="store_true",
                        help="no response cache (default: <output stem>.cache.sqlite beside --output, unless "
                             "--judge-kwargs names a cache)")
    parser.add_argument("--stats", default=None, help="also write per-process shards and judge stats to this JSON file")
    add_on_error_flag(parser)
    return parser


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def read_columns(path: str, takes_ids: bool) -> dict[str, list[Any]]:
    """Columns from a JSONL file (every row must have the same keys) or an image folder (ids: the
    paths relative to it, `vlmjudge.cli.intake.image_items`)."""
    from ..outputs import iter_jsonl

    if os.path.isdir(path):
        items = image_items([path])
        columns: dict[str, list[Any]] = {"image": [os.fspath(file) for _, file in items]}
        if takes_ids:
            columns[ID_COLUMN] = [item for item, _ in items]
        return columns
    rows: list[dict[str, Any]] = []
    for number, row in iter_jsonl(path):
        if rows and set(row) != set(rows[0]):
            raise ValueError(f"{path}:{number}: columns {sorted(row)} differ from the first row's {sorted(rows[0])}")
        rows.append(row)
    if not rows:
        raise ValueError(f"{path} holds no rows")
    return {name: [row[name] for row in rows] for name in rows[0]}


#: Columns that hold images (paths in a JSONL input), checked before the judge loads.
IMAGE_COLUMNS = ("image", "reference", "generated", "conditioning")


def _row_images(columns: Mapping[str, list[Any]]) -> list[list[Any]]:
    """Per row, the image paths of its image columns (a list cell is several images; None is none)."""
    present = [name for name in IMAGE_COLUMNS if name in columns]
    n = len(next(iter(columns.values())))
    rows: list[list[Any]] = [[] for _ in range(n)]
    for name in present:
        for row, cell in zip(rows, columns[name]):
            cells = cell if isinstance(cell, (list, tuple)) else [cell]
            row.extend(c for c in cells if isinstance(c, (str, os.PathLike)))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, check the images, score this process's shard, gather, and write on process 0.

    Exit status as `vlmjudge` judging commands (see --help); Ctrl-C or SIGTERM prints one line."""
    from .exits import run_command

    args = build_parser().parse_args(argv)
    return run_command(lambda: _run(args), "vlmjudge.distributed",
                       "with a response cache in --judge-kwargs, a rerun resumes from it")


def _check_model(spec, args: argparse.Namespace) -> None:
    """An in-process judge that cannot load (offline, a typo, the method's Hub-only default) is one
    line before any process loads it, never a traceback from deep inside from_pretrained."""
    if args.backend != "transformers":
        return
    from ..offline import unavailable_reason
    model = args.model if args.model is not None else spec.default_model
    if model is None:
        raise CommandError(f"{spec.name}: give --model (the method has no default model)")
    if looks_like_path(str(model)) and not os.path.isdir(os.path.expanduser(str(model))):
        raise CommandError(f"--model {model}: no such checkpoint folder")
    reason = unavailable_reason(model)
    if reason:
        given = "--model" if args.model is not None else f"the {spec.name} default model (no --model given)"
        raise CommandError(f"{given} {model}: {reason}; pass --model with a local checkpoint folder, "
                           "e.g. one built by `python -m vlmjudge.testing demo DIR`")


def _run(args: argparse.Namespace) -> int:
    from ..distributed.accelerate_shards import default_state, score_dataset_accelerate
    from .exits import finish, nothing_readable, start_run
    from .intake import screen

    start_run(args.output)
    try:
        spec = resolve_method(args.method)
        takes_ids = ID_COLUMN in (*spec.inputs, *spec.optional_inputs)
        columns = read_columns(args.input, takes_ids)
    except (OSError, ValueError, LookupError, TypeError, AttributeError, ImportError) as error:
        raise CommandError(str(error)) from None
    n = len(next(iter(columns.values())))
    if takes_ids and ID_COLUMN not in columns:  # the ids an unfiltered run gives, whatever is skipped
        columns[ID_COLUMN] = [str(i) for i in range(n)]
    # every process checks every row, so all of them drop the same rows before sharding
    screened = screen(_row_images(columns), args.on_error)
    state = default_state()
    if not screened.kept:
        return nothing_readable(screened, args.output) if state.is_main_process else EXIT_NONE_SCORED
    kept = {name: [values[i] for i in screened.kept] for name, values in columns.items()}
    _check_model(spec, args)
    judge_kwargs = dict(args.judge_kwargs)
    if not args.no_cache and "cache" not in judge_kwargs:  # the default cache of every scoring command
        judge_kwargs["cache"] = os.fspath(default_cache_path(args.output))
    result = score_dataset_accelerate(spec, kept, model=args.model, backend=args.backend,
                                      judge_kwargs=judge_kwargs, method_config=args.config,
                                      chunk_size=args.chunk_size)
    records = [with_resolution_note(record, screened.notes.get(i)) for i, record in zip(screened.kept, result.records)]
    status = exit_status(n, len(records))
    if state.is_main_process:
        write_records(args.output, records)
        manifest = write_manifest(args.output, run_manifest(spec, args, result, judge_kwargs, n,
                                                            len(screened.failures)))
        RUN.saved = len(records)
        print_summary(records, [args.output, manifest], skipped=len(screened.failures))
        if args.stats:
            with open(args.stats, "w", encoding="utf-8") as fh:
                json.dump({"method": spec.name, "n": len(records), "skipped": len(screened.failures),
                           "shards": result.shards, "stats": result.stats}, fh, indent=1)
        status = finish(n, len(records), screened.failures, args.output)
    state.wait_for_everyone()
    return status


#: --judge-kwargs that never go into a manifest (a manifest is shared with the results).
SECRET_WORDS = ("key", "token", "secret", "password")


def run_manifest(spec, args: argparse.Namespace, result: Any, judge_kwargs: Mapping[str, Any], n_items: int,
                 n_skipped: int) -> dict[str, Any]:
    """The manifest beside the records: what judged (the scorer's own manifest), the method, the
    command's settings (secrets left out) and the counts, as every scoring command writes one."""
    settings = {k: v for k, v in judge_kwargs.items() if not any(word in k.lower() for word in SECRET_WORDS)}
    return {**result.manifest, "method": spec.name, "command": "python -m vlmjudge.distributed",
            "model": result.manifest.get("model", args.model if args.model is not None else spec.default_model),
            "backend": result.manifest.get("backend", args.backend), "config": dict(args.config),
            "judge_kwargs": json.loads(json.dumps(settings, default=str)), "input": args.input,
            "n_items": n_items, "n_scored": len(result.records), "n_skipped": n_skipped,
            "processes": len(result.shards), "cache": judge_kwargs.get("cache")}
