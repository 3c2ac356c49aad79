"""`vlmjudge compare` marks what its numbers rest on (issue 52, item 3): the issue's trial (5 items,
one run with 3 N/A scoring high) ranks that run first with an unscored column and a warning in the
printed table, comparison.json and report.html; under 10 paired items the exact test and the
unreliable note; an interval that disagrees with its p-value explained beside it."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from vlmjudge.cli import main
from vlmjudge.outputs import manifest_path


def write_run(folder: Path, scores) -> str:
    folder.mkdir(parents=True)
    path = folder / "records.jsonl"
    path.write_text("".join(json.dumps({"id": f"i{k}.png", "status": "scored" if s is not None else "not_applicable",
                                        "score": s, "checks": []}) + "\n" for k, s in enumerate(scores)))
    manifest_path(path).write_text(json.dumps({"method": "terravis", "model": "judge/x"}))
    return str(path)


def test_the_issue_trial_is_marked_everywhere(tmp_path):
    runs = [write_run(tmp_path / "a", [0.5, 0.6, 0.55, 0.4, 0.62]), write_run(tmp_path / "b", [0.9, 0.95, None, None, None]),
            write_run(tmp_path / "c", [0.52, 0.64, 0.58, 0.41, 0.66])]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["compare", *runs, "--out", str(tmp_path / "cmp"), "--resamples", "200"]) == 0
    printed = out.getvalue().splitlines()
    assert printed[0].startswith("1. b:") and printed[0].endswith("n=2 unscored=3 of 5")
    warning = "run b: 3 of 5 items N/A, failed or absent; its mean score is over 2 items, the others' over 5"
    assert f"warning: {warning}" in printed
    assert any(line.startswith("warning: under 10 paired items") for line in printed)
    assert any(line.startswith("note: b - a: the bootstrap interval excludes 0 but p = 0.5") for line in printed)
    result = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert result["warnings"][0] == warning
    assert all(pair["exact_test"] and pair["unreliable"] for pair in result["pairwise"])
    page = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    assert "unscored (N/A, failed, absent)" in page and "3 of 5" in page
    assert "run b: 3 of 5 items N/A, failed or absent" in page and "the bootstrap interval excludes 0" in page
