"""``vlmjudge viescore2 ...``: evaluate saved judge outputs against ground truth, optionally with overlays.

    vlmjudge viescore2 evaluate predictions.jsonl --references gt.jsonl [--out result.json]
                                [--grid-size 16] [--overlays DIR --images DIR]

Predictions JSONL, one object per line: ``{"id": "img-1", "text": "<judge output>"}``; the
text is the judge's full answer (score lines, then grid lines).

References JSONL, one object per line::

    {"id": "img-1", "grid": "r5: 8,9!\\nr6: 9", "score": 6.5}
    {"id": "img-2", "artifact": "none", "misalign": "r2: 3", "pq": 8, "sc": 4, "image": "img-2.png"}

``grid`` is one grid body in the text format (rows or ``none``); ``artifact`` and
``misalign`` are the two category bodies and come together; a grid field that is absent or
null means no localization ground truth. ``score``, ``pq`` and ``sc`` are 0-10 targets, each
optional. ``image`` (optional) is the image file relative to ``--images``; without it the
overlay looks for ``<id>.png``, ``.jpg``, ``.jpeg`` or ``.webp`` there.

The result JSON holds ``metrics`` (every metric of ``viescore2.evaluation.evaluate_suite``)
and ``examples`` (per-example grid status, scores and grid IoU).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterator

from .evaluation import Reference, evaluate_suite, grid_iou
from .grid import DEFAULT_N, parse_output, union_of

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


def _jsonl(path: str) -> Iterator[tuple[int, dict]]:
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number}: not JSON ({err.msg})") from None
            if not isinstance(record, dict) or "id" not in record:
                raise ValueError(f"{path}:{number}: each line must be an object with an 'id'")
            yield number, record


def _by_id(path: str, kind: str) -> dict[str, tuple[int, dict]]:
    out: dict[str, tuple[int, dict]] = {}
    for number, record in _jsonl(path):
        key = str(record["id"])
        if key in out:
            raise ValueError(f"{path}:{number}: {kind} id {key!r} repeated (first on line {out[key][0]})")
        out[key] = (number, record)
    return out


def load_pairs(predictions: str, references: str, n: int = DEFAULT_N) -> tuple[list[str], list[str], list[Reference]]:
    """(ids, judge texts, references) matched by id, in reference order; mismatches raise ValueError."""
    preds, refs = _by_id(predictions, "prediction"), _by_id(references, "reference")
    missing, extra = [k for k in refs if k not in preds], [k for k in preds if k not in refs]
    if missing or extra:
        raise ValueError(f"ids differ: {len(missing)} references without a prediction {missing[:5]}, "
                         f"{len(extra)} predictions without a reference {extra[:5]}")
    texts = []
    for key in refs:
        number, record = preds[key]
        if not isinstance(record.get("text"), str):
            raise ValueError(f"{predictions}:{number}: 'text' must be a string")
        texts.append(record["text"])
    parsed_refs = []
    for key, (number, record) in refs.items():
        try:
            parsed_refs.append(Reference.from_record(record, n=n))
        except ValueError as err:
            raise ValueError(f"{references}:{number}: {err}") from None
    return list(refs), texts, parsed_refs


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def format_table(metrics: dict[str, Any]) -> str:
    """Two aligned columns: metric name and value (n/a where undefined)."""
    width = max(len(k) for k in metrics)
    return "\n".join(f"{k:<{width}}  {_cell(v)}" for k, v in metrics.items())


def _image_path(images: Path, key: str, record: dict) -> Path | None:
    if record.get("image"):
        path = images / str(record["image"])
        return path if path.is_file() else None
    for suffix in IMAGE_SUFFIXES:
        if (images / f"{key}{suffix}").is_file():
            return images / f"{key}{suffix}"
    return None


def _write_overlays(args: argparse.Namespace, ids: list[str], texts: list[str], refs: list[Reference]) -> int:
    from .render import save_overlay
    out, images = Path(args.overlays), Path(args.images)
    out.mkdir(parents=True, exist_ok=True)
    records = {k: r for k, (_, r) in _by_id(args.references, "reference").items()}
    written = 0
    for key, text, ref in zip(ids, texts, refs):
        parsed = parse_output(text, n=args.grid_size)
        image = _image_path(images, key, records[key])
        if parsed.localization is None or image is None:
            reason = "no image found" if image is None else "grid not parsed"
            print(f"overlay skipped for {key!r}: {reason}", file=sys.stderr)
            continue
        save_overlay(out / f"{Path(key).name}.png", image, parsed.localization, ref.localization)
        written += 1
    return written


def _cmd_evaluate(args: argparse.Namespace) -> int:
    if (args.overlays is None) != (args.images is None):
        print("vlmjudge viescore2 evaluate: --overlays and --images go together", file=sys.stderr)
        return 2
    try:
        ids, texts, refs = load_pairs(args.predictions, args.references, n=args.grid_size)
    except (OSError, ValueError) as err:
        print(f"vlmjudge viescore2 evaluate: error: {err}", file=sys.stderr)
        return 2
    metrics = evaluate_suite(texts, refs, n=args.grid_size)
    examples = []
    for key, text, ref in zip(ids, texts, refs):
        parsed = parse_output(text, n=args.grid_size)
        iou = grid_iou(parsed.union, union_of(ref.localization)) if ref.localization is not None else None
        examples.append({"id": key, "grid_status": parsed.status.value, "scores": dict(parsed.scores),
                         "overall": parsed.overall, "grid_iou": iou})
    print(format_table(metrics))
    if args.out:
        Path(args.out).write_text(json.dumps({"metrics": metrics, "examples": examples}, indent=2) + "\n",
                                  encoding="utf-8")
        print(f"wrote {args.out}")
    if args.overlays:
        print(f"wrote {_write_overlays(args, ids, texts, refs)} overlays to {args.overlays}")
    return 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the viescore2 sub-commands to the ``vlmjudge viescore2`` parser."""
    sub = parser.add_subparsers(dest="viescore2_command", required=True)
    ev = sub.add_parser("evaluate", help="metrics of saved judge outputs against ground-truth grids and scores",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ev.add_argument("predictions", help="JSONL of {id, text}")
    ev.add_argument("--references", required=True, help="JSONL of {id, grid | artifact+misalign, score, pq, sc}")
    ev.add_argument("--out", default=None, help="write metrics and per-example results as JSON")
    ev.add_argument("--grid-size", type=int, default=DEFAULT_N, help="N of the N x N grid (default 16)")
    ev.add_argument("--overlays", default=None, help="folder for PNG overlays (needs --images)")
    ev.add_argument("--images", default=None, help="folder holding the judged images")
    ev.set_defaults(func=_cmd_evaluate)
