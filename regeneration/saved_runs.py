"""The run folder: every prompt, image and score written as soon as it exists, so a rerun resumes.

Layout (one folder per reference item under `items/`):

    config.json                      settings the run was made with (checked on resume)
    log.jsonl                        append-only events: prompts, images, candidate scores, results
    items/<id>/reference.png         the reference, copied
    items/<id>/iut.json              the Image Understanding Tree (IUT mode)
    items/<id>/initial_<mode>.json   the initial prompt (IUT, direct, interrogator or user) and its source
    items/<id>/round_<t>/prompts.json, cand_<k>.png, scores.json, feedback.json
    items/<id>/result.json           the final regeneration and its scores

Files are written to a temporary name and renamed, so a killed run never leaves half a file.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from PIL import Image

from vlmjudge.outputs import iter_jsonl

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_item_id(item: str) -> str:
    """Item ids become folder names: letters, digits, '.', '_' and '-' only."""
    if not _SAFE_ID.match(item) or item in (".", ".."):
        raise ValueError(f"item id {item!r} cannot be a folder name; use letters, digits, '.', '_' or '-'")
    return item


class RunFolder:
    """Paths and atomic reads/writes inside one run folder."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.log_path = self.root / "log.jsonl"

    def item(self, item: str) -> Path:
        return self.root / "items" / check_item_id(item)

    def round_dir(self, item: str, round: int) -> Path:
        return self.item(item) / f"round_{round}"

    def candidate(self, item: str, round: int, index: int) -> Path:
        return self.round_dir(item, round) / f"cand_{index}.png"

    @staticmethod
    def write_json(path: Path, data: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        # A lone surrogate (an answer's "\\ud800" escape, parsed) has no UTF-8 form: it is written
        # back as that escape, which reads as the same string.
        tmp.write_bytes(json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8", errors="backslashreplace"))
        os.replace(tmp, path)

    @staticmethod
    def read_json(path: Path) -> Any:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    @staticmethod
    def save_image(path: Path, image: Image.Image) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.stem + ".tmp.png")
        image.save(tmp, format="PNG")
        os.replace(tmp, path)

    @staticmethod
    def load_image(path: Path) -> Image.Image:
        with Image.open(path) as img:
            return img.convert("RGB")

    def log(self, event: str, **fields: Any) -> None:
        """Append one event line (flushed at once)."""
        with open(self.log_path, "a", encoding="utf-8", errors="backslashreplace") as fh:  # as write_json
            fh.write(json.dumps({"event": event, **fields}, ensure_ascii=False) + "\n")

    def events(self, event: str | None = None) -> list[dict[str, Any]]:
        """Logged events (optionally of one kind), deduplicated by (event, item, round, index): the
        last line wins, so a step redone after a kill between log and file write counts once."""
        if not self.log_path.is_file():
            return []
        rows: dict[tuple, dict[str, Any]] = {}
        for _, row in iter_jsonl(self.log_path):  # a broken line is named by file and line
            if event is not None and row.get("event") != event:
                continue
            rows[(row.get("event"), row.get("item"), row.get("round"), row.get("index"))] = row
        return list(rows.values())

    def items(self) -> Iterator[str]:
        base = self.root / "items"
        if base.is_dir():
            yield from sorted(p.name for p in base.iterdir() if p.is_dir())
