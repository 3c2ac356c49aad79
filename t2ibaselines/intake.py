"""The prompts file of the baselines' `score` command, matched to the images by id.

A prompts file is JSONL or CSV with `id` and `prompt` (optional `category`, and `reference`: an
image path relative to the file, for the methods that compare with one), TIFA's released text
inputs (a JSON list of `id` and `caption`), or a .txt file with one prompt per line in the images'
order. An image takes the prompt whose id is its own id, the id without its suffix, its file's stem
or its folder's name (GenAI-Bench's `<prompt id>.png` and `<prompt id>/<k>.png` layouts).
"""
from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Sequence


@dataclass(frozen=True)
class PromptRow:
    """One prompt of the file: its id, text, optional category and reference image."""
    id: str
    prompt: str
    category: str | None = None
    reference: Path | None = None


def id_keys(item_id: str) -> list[str]:
    """The prompt ids an image id may stand for, most specific first.

    Examples:
        >>> id_keys("sdxl/coco_301091.png")
        ['sdxl/coco_301091.png', 'sdxl/coco_301091', 'coco_301091', 'sdxl']
    """
    path = PurePosixPath(item_id)
    keys = [item_id, str(path.with_suffix("")) if path.suffix else item_id, path.stem]
    if path.parent.name:
        keys.append(path.parent.name)
    return list(dict.fromkeys(keys))


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _text(source: Path) -> str:
    if source.is_dir():
        raise ValueError(f"--prompts {source} is a folder; give the prompts file")
    if not source.is_file():
        raise ValueError(f"--prompts {source}: no such file")
    try:
        text = source.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"--prompts {source}: not a UTF-8 text file") from None
    if not text.strip():
        raise ValueError(f"--prompts {source}: the file is empty")
    return text


def _row(value: Any, where: str, source: Path, text_key: str = "prompt") -> PromptRow:
    """A row from one JSON object or CSV row, every field checked."""
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object with id and {text_key}, got {type(value).__name__}")
    missing = [key for key in ("id", text_key) if value.get(key) in (None, "")]
    if missing:
        raise ValueError(f"{where}: missing {' and '.join(missing)}")
    item_id, prompt = value["id"], value[text_key]
    if isinstance(item_id, bool) or not isinstance(item_id, (str, int)) or not str(item_id).strip():
        raise ValueError(f"{where}: id must be a non-empty string or an integer, got {item_id!r}")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"{where}: {text_key} must be a non-empty string, got {prompt!r}")
    category, reference = value.get("category"), value.get("reference")
    if category is not None and not isinstance(category, str):
        raise ValueError(f"{where}: category must be a string, got {category!r}")
    if reference not in (None, ""):
        if not isinstance(reference, str):
            raise ValueError(f"{where}: reference must be an image path, got {reference!r}")
        path = source.parent / reference
        if not path.is_file():
            raise ValueError(f"{where}: reference image {path} not found")
        reference = path
    return PromptRow(str(item_id), prompt, category or None, reference or None)


def read_prompt_rows(path: str | os.PathLike) -> list[PromptRow] | list[str]:
    """The rows of a JSONL, CSV or JSON prompts file (ids unique), or the lines of a text file."""
    source = Path(path)
    text = _text(source)
    suffix = source.suffix.lower()
    if suffix == ".jsonl":
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    value = json.loads(line, parse_constant=_refuse_constant)
                except ValueError as error:
                    raise ValueError(f"--prompts {source}:{number}: not a JSON object ({error})") from None
                rows.append(_row(value, f"--prompts {source}:{number}", source))
    elif suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        if not {"id", "prompt"} <= set(reader.fieldnames or []):
            raise ValueError(f"--prompts {source}: a CSV needs id and prompt columns, has {reader.fieldnames}")
        rows = [_row(dict(r), f"--prompts {source}:{n}", source) for n, r in enumerate(reader, 2)]
    elif suffix == ".json":
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except ValueError as error:
            raise ValueError(f"--prompts {source}: not valid JSON ({error})") from None
        if not isinstance(data, list):
            raise ValueError(f"--prompts {source}: a JSON prompts file is a list of {{id, caption}} objects "
                             "(TIFA's text inputs)")
        rows = [_row(v, f"--prompts {source} entry {n}", source,
                     "caption" if isinstance(v, dict) and "caption" in v else "prompt") for n, v in enumerate(data)]
    elif suffix == ".txt":
        return [line for line in text.splitlines() if line.strip()]
    else:
        raise ValueError(f"--prompts {source}: a prompts file is .jsonl or .csv (id, prompt), .json (TIFA's text "
                         "inputs) or .txt (one prompt per line, in the images' order)")
    seen: set[str] = set()
    repeated = sorted({r.id for r in rows if r.id in seen or seen.add(r.id)})
    if repeated:
        raise ValueError(f"--prompts {source}: ids repeated: {repeated[:5]}")
    return rows


def prompts_for(path: str | os.PathLike, image_ids: Sequence[str]) -> list[PromptRow]:
    """The prompt row of each image, in the images' order; a ValueError listing images without one.

    Examples:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "prompts.jsonl"
        >>> _ = path.write_text('{"id": "cat", "prompt": "a cat"}\\n{"id": "dog", "prompt": "a dog"}\\n')
        >>> [row.prompt for row in prompts_for(path, ["sdxl/dog.png", "cat.png"])]
        ['a dog', 'a cat']
        >>> prompts_for(path, ["cow.png"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: --prompts ...prompts.jsonl: no prompt for 1 image(s): cow.png
    """
    rows = read_prompt_rows(path)
    if rows and isinstance(rows[0], str):
        if len(rows) != len(image_ids):
            raise ValueError(f"--prompts {path}: {len(rows)} prompt lines for {len(image_ids)} images (a text file "
                             "holds one prompt per line, in the images' order; use JSONL or CSV to match by id)")
        return [PromptRow(item_id, line) for item_id, line in zip(image_ids, rows)]
    by_id = {row.id: row for row in rows}  # type: ignore[union-attr]
    found = [next((by_id[k] for k in id_keys(item_id) if k in by_id), None) for item_id in image_ids]
    missing = [item_id for item_id, row in zip(image_ids, found) if row is None]
    if missing:
        raise ValueError(f"--prompts {path}: no prompt for {len(missing)} image(s): {', '.join(missing[:5])}"
                         + (" ..." if len(missing) > 5 else ""))
    return found  # type: ignore[return-value]


__all__ = ["PromptRow", "id_keys", "prompts_for", "read_prompt_rows"]
