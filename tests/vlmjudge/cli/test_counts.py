"""Counts agree everywhere, and each reason is the true one: through every judging command, a folder
with the four bad files of the bad-input tests, a symlink loop and a broken link (six bad inputs),
and one image the judge gives no answer for. The summary's bad-input count, the listing's header
and its lines, and the failures file all say six skipped and one failed to run."""
from __future__ import annotations

import json
import os
import re

import pytest

from test_bad_inputs import COMMANDS, run_vlmjudge, write_bad, write_good
from vlmjudge.cli.exits import EXIT_SOME_FAILED, failures_path

FAILS_ON_SMALL = "cli_bad_inputs_judge:FailsOnSmallJudge"  # b_small (40 x 40) gets no answer

#: How each command's own summary says how many were skipped as bad input.
SUMMARY_COUNT = dict.fromkeys(("terravis score", "viescore2 score", "fager score", "regeneration compare",
                               "vqascore score", "tifa score"),
                              r"of \d+ \((\d+) skipped as bad input\)")  # the shared summary line


def listed(err: str, header: str) -> list[str]:
    """The indented lines under a header of the failures listing (empty when the header is absent)."""
    lines = err.splitlines()
    matches = [k for k, line in enumerate(lines) if re.fullmatch(header, line)]
    if not matches:
        return []
    block = []
    for line in lines[matches[0] + 1:]:
        if not line.startswith("  "):
            break
        block.append(line.strip())
    return block


@pytest.mark.parametrize("name", COMMANDS)
def test_summary_listing_and_failures_file_count_the_same_with_true_reasons(name, tmp_path, encoders):
    folder = tmp_path / "images"
    write_good(folder)
    write_bad(folder)
    os.symlink(folder / "g_loop.png", folder / "g_loop.png")
    os.symlink(folder / "gone.png", folder / "h_broken.png")
    build, _ = COMMANDS[name]
    argv, out = build(folder, tmp_path, FAILS_ON_SMALL, encoders) if name == "regeneration compare" \
        else build(folder, tmp_path, FAILS_ON_SMALL)
    if name == "regeneration compare":  # the links get references of the same stem, so they pair
        for stem in ("g_loop", "h_broken"):
            (tmp_path / "refs" / f"{stem}.png").write_bytes((tmp_path / "refs" / "a_good.png").read_bytes())
    code, stdout, err = run_vlmjudge(argv)
    assert code == EXIT_SOME_FAILED, err
    assert "Traceback" not in err

    bad = listed(err, r"skipped (\d+) item\(s\) as bad input:")
    assert f"skipped {len(bad)} item(s) as bad input:" in err and len(bad) == 6, err
    failed = listed(err, r"(\d+) item\(s\) failed to run:")
    assert f"{len(failed)} item(s) failed to run:" in err and len(failed) == 1, err
    assert "b_small" in failed[0]
    summary = re.search(SUMMARY_COUNT[name], stdout + err)
    assert summary is not None and int(summary.group(1)) == len(bad), stdout + err

    reasons = {os.path.basename(line.split(": ", 1)[0]): line.split(": ", 1)[1] for line in bad}
    assert reasons["g_loop.png"].startswith("symlink loop")
    assert reasons["h_broken.png"].startswith("broken symlink") and "gone.png" in reasons["h_broken.png"]

    written = [json.loads(line) for line in failures_path(out).read_text().splitlines()]
    assert sum(f["bad_input"] for f in written) == len(bad) and sum(not f["bad_input"] for f in written) == 1


@pytest.fixture
def encoders(tiny_encoder_dirs):
    """{"clip": folder, "dino": folder}: the tiny encoders of regeneration compare."""
    return tiny_encoder_dirs
