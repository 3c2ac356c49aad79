"""What the baselines' tests share: running the `vlmjudge` command in process, reading its one-line
refusals, and writing small image folders and prompt files."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from PIL import Image

from vlmjudge.cli import main as vlmjudge_main

#: The prompts of the images `write_images` makes, by image stem.
PROMPTS = {"red": "a red square", "navy": "a navy blue square", "olive": "an olive green square"}


def run_vlmjudge(argv: list[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `vlmjudge ARGV`, run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = vlmjudge_main(argv)
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    """The single stderr line of a refused run (no traceback, nothing else)."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def write_images(folder: Path, sizes=((48, 48), (64, 40), (40, 56))) -> Path:
    """A folder with one PNG per prompt of `PROMPTS` (different sizes, so token counts differ)."""
    folder.mkdir(parents=True, exist_ok=True)
    for (stem, _), size in zip(PROMPTS.items(), sizes):
        Image.new("RGB", size, stem).save(folder / f"{stem}.png")
    return folder


def write_prompts(path: Path, prompts: dict[str, str] = PROMPTS) -> Path:
    """A JSONL prompts file, one {id, prompt} per line."""
    path.write_text("".join(json.dumps({"id": k, "prompt": v}) + "\n" for k, v in prompts.items()), encoding="utf-8")
    return path


def read_records(path: Path) -> dict[str, dict]:
    """The records of a run by id."""
    return {row["id"]: row for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
