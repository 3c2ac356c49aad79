"""Ctrl-C writes what it says: a score run interrupted after some images keeps their records in the
file the message names (its manifest marked partial), or, for a command that writes at the end,
names only the answer cache; either way the rerun resumes and finishes the whole run."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from test_bad_inputs import fager_cmd, run_vlmjudge, terravis_cmd, viescore2_cmd
from vlmjudge.cli.exits import EXIT_INTERRUPTED
from vlmjudge.outputs import manifest_path

#: The scripted judge presses Ctrl-C at the first request about a 40 x 40 image (the fifth here).
INTERRUPTING = "cli_bad_inputs_judge:InterruptedJudge"
ANSWERING = "cli_bad_inputs_judge:ConstantJudge"
FINISHED_BEFORE = 4


def eight_images(folder: Path) -> Path:
    """Eight images; the fifth is the 40 x 40 one the judge stops at."""
    folder.mkdir(parents=True)
    for k in range(8):
        size = (40, 40) if k == FINISHED_BEFORE else (64, 64)
        Image.new("RGB", size, (30 * k, 90, 160)).save(folder / f"img{k}.png")
    return folder


def answering(argv: list[str]) -> list[str]:
    return [ANSWERING if a == INTERRUPTING else a for a in argv]


@pytest.mark.parametrize("command", ["terravis", "viescore2"])
def test_interrupted_streaming_run_keeps_the_finished_records_where_it_says(tmp_path, command):
    folder = eight_images(tmp_path / "images")
    if command == "terravis":
        argv, out = terravis_cmd(folder, tmp_path, INTERRUPTING)
        id_field = "id"
    else:
        argv, out = viescore2_cmd(folder, tmp_path, INTERRUPTING)
        argv += ["--batch-size", "1"]  # four images a write
        id_field = "id"
    code, _, err = run_vlmjudge(argv)
    assert code == EXIT_INTERRUPTED and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"interrupted: {FINISHED_BEFORE} result(s) finished and saved to {out}"), line
    assert "marked partial" in line
    records = [json.loads(text) for text in out.read_text().splitlines()]
    assert sorted(Path(r[id_field]).stem for r in records) == [f"img{k}" for k in range(FINISHED_BEFORE)]
    manifest = json.loads(manifest_path(out).read_text())
    assert manifest["partial"] is True and manifest["n_saved"] == FINISHED_BEFORE
    assert not list(tmp_path.rglob("*.partial"))

    code, _, err = run_vlmjudge(answering(argv))
    assert code == 0, err
    assert f"resuming: {FINISHED_BEFORE} of 8 done" in err
    assert len(out.read_text().splitlines()) == 8
    assert "partial" not in json.loads(manifest_path(out).read_text())


def test_interrupted_run_that_writes_at_the_end_names_only_the_cache(tmp_path):
    folder = eight_images(tmp_path / "images")
    argv, out = fager_cmd(folder, tmp_path, INTERRUPTING)
    code, _, err = run_vlmjudge(argv)
    assert code == EXIT_INTERRUPTED and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    cache = out.with_name("details.cache.sqlite")
    assert line.startswith("interrupted: no results written yet") and str(cache) in line, line
    assert str(out) not in line.replace(str(cache), "")
    assert not out.exists() and cache.is_file()

    code, _, err = run_vlmjudge(answering(argv))
    assert code == 0, err
    assert len(out.read_text().splitlines()) == 8
