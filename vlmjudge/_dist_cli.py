"""`python -m vlmjudge.distributed METHOD --input ... --output ...`: score a JSONL file or an
image folder with any registered method, one shard per process of an `accelerate launch` /
`torchrun` run (or in one plain process); process 0 writes the records in input order."""
from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

from ._dist_common import ID_COLUMN, resolve_method

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m vlmjudge.distributed",
        description="Score a dataset with a vlmjudge method across the processes of an accelerate/torchrun "
                    "launch: each process loads its own judge and scores a contiguous shard.",
        epilog="Example: accelerate launch --num_processes 4 -m vlmjudge.distributed terravis "
               "--input images/ --output records.jsonl --model Qwen/Qwen3-VL-8B-Instruct")
    parser.add_argument("method", help="a registered method name (terravis, viescore2, ...) or module:SPEC")
    parser.add_argument("--input", required=True,
                        help="a JSONL file (one object of columns per row; images as paths) or a folder of images "
                             "(column 'image', file names as ids)")
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
    parser.add_argument("--stats", default=None, help="also write per-process shards and judge stats to this JSON file")
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
    """Columns from a JSONL file (every row must have the same keys) or an image folder."""
    if os.path.isdir(path):
        names = sorted(f for f in os.listdir(path) if f.lower().endswith(IMAGE_SUFFIXES))
        if not names:
            raise ValueError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in folder {path}")
        columns: dict[str, list[Any]] = {"image": [os.path.join(path, f) for f in names]}
        if takes_ids:
            columns[ID_COLUMN] = names
        return columns
    rows = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON: {exc}") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number}: each line must be a JSON object of columns")
            if rows and set(row) != set(rows[0]):
                raise ValueError(f"{path}:{number}: columns {sorted(row)} differ from line 1's {sorted(rows[0])}")
            rows.append(row)
    if not rows:
        raise ValueError(f"{path} holds no rows")
    return {name: [row[name] for row in rows] for name in rows[0]}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, score this process's shard, gather, and write on process 0."""
    from ._dist_accelerate import default_state, score_dataset_accelerate

    args = build_parser().parse_args(argv)
    spec = resolve_method(args.method)
    columns = read_columns(args.input, ID_COLUMN in (*spec.inputs, *spec.optional_inputs))
    result = score_dataset_accelerate(spec, columns, model=args.model, backend=args.backend,
                                      judge_kwargs=args.judge_kwargs, method_config=args.config,
                                      chunk_size=args.chunk_size)
    state = default_state()
    if state.is_main_process:
        _write_jsonl(args.output, result.records)
        if args.stats:
            with open(args.stats, "w", encoding="utf-8") as fh:
                json.dump({"method": spec.name, "n": len(result.records), "shards": result.shards,
                           "stats": result.stats}, fh, indent=1)
    state.wait_for_everyone()
    return 0


def _write_jsonl(path: str, records: list[dict[str, Any]]) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    os.replace(tmp, path)
