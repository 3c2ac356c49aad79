"""`vlmjudge fager abtest|rescore`, in process through configure() and once through the console script."""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess

import pytest

from fager.cli import configure
from fager.saved_runs import RELEASED_SUMMARY_COLUMNS, read_summary


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="vlmjudge fager")
    configure(parser)
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def results(abo):
    return abo / "results"


@pytest.mark.parametrize(("tie", "expected"), [
    (None, "tie=full: 41/50 = 0.8200 (50 pairs, 18 ties)"),
    ("zero", "tie=zero: 23/50 = 0.4600 (50 pairs, 18 ties)"),
    ("skip", "tie=skip: 23/32 = 0.7188 (50 pairs, 18 ties)"),
])
@pytest.mark.parametrize(("factual", "generated"), [
    ("real/details.jsonl", "flux2/details.jsonl"), ("real/summary.csv", "flux2/summary.csv"),
    ("real/details.jsonl", "flux2/summary.csv"),
])
def test_abtest(results, capsys, tie, expected, factual, generated):
    argv = ["abtest", str(results / factual), str(results / generated)] + (["--tie", tie] if tie else [])
    assert run(argv) == 0
    assert capsys.readouterr().out.strip() == expected


def test_abtest_json(results, capsys):
    assert run(["abtest", str(results / "real/details.jsonl"), str(results / "flux2/details.jsonl"),
                "--tie", "skip", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["pairs"], report["correct"], report["wrong"], report["ties"]) == (50, 23, 9, 18)
    assert len(report["margins"]) == 50


def test_abtest_bad_input(results, tmp_path, capsys):
    other = tmp_path / "scores.txt"
    other.write_text("", encoding="utf-8")
    assert run(["abtest", str(other), str(results / "flux2/summary.csv")]) == 2
    assert "expected a summary .csv or a details .jsonl" in capsys.readouterr().err
    half = tmp_path / "half.csv"
    lines = (results / "real/summary.csv").read_text("utf-8").splitlines()
    half.write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    assert run(["abtest", str(half), str(results / "flux2/summary.csv")]) == 2
    assert "unpaired" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(["abtest", str(half), str(half), "--tie", "half"])


def test_rescore_writes_the_released_summary(results, tmp_path, capsys):
    out, verdicts = tmp_path / "summary.csv", tmp_path / "verdicts.jsonl"
    assert run(["rescore", str(results / "real/details.jsonl"), "--out", str(out), "--check",
                "--verdicts", str(verdicts)]) == 0
    assert "50/50 records reproduced" in capsys.readouterr().err
    mine = {r["index"]: r for r in read_summary(out)}
    for row in read_summary(results / "real/summary.csv"):
        assert {c: mine[row["index"]][c] for c in RELEASED_SUMMARY_COLUMNS} == row
    # the project's own verdict lines feed the A/B test like a released details.jsonl
    assert run(["abtest", str(verdicts), str(results / "flux2/details.jsonl")]) == 0
    assert capsys.readouterr().out.startswith("tie=full: 41/50")


def test_rescore_to_stdout_with_other_thresholds(results, capsys):
    code = run(["rescore", str(results / "flux2/details.jsonl"), "--keep-threshold", "90", "--check"])
    captured = capsys.readouterr()
    assert code == 1  # decisions now differ from the recorded ones
    assert captured.out.startswith("image_file,index,decision,")
    assert "differs: index" in captured.err
    assert run(["rescore", str(results / "flux2/details.jsonl"), "--keep-threshold", "101"]) == 2


def test_rescore_counts_parse_failures(results, tmp_path, capsys):
    record = json.loads((results / "real/details.jsonl").read_text("utf-8").splitlines()[0])
    record["per_question"][0]["answer"] = ""
    path = tmp_path / "details.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert run(["rescore", str(path)]) == 0
    captured = capsys.readouterr()
    assert "1 parse failures" in captured.err
    assert captured.out.splitlines()[1].endswith(",1")


def test_rescore_missing_file(tmp_path, capsys):
    assert run(["rescore", str(tmp_path / "absent.jsonl")]) == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("vlmjudge") is None, reason="vlmjudge console script not installed")
def test_console_script(results):
    done = subprocess.run(["vlmjudge", "fager", "abtest", str(results / "real/summary.csv"),
                           str(results / "flux2/summary.csv"), "--tie", "skip"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "tie=skip: 23/32 = 0.7188 (50 pairs, 18 ties)"
