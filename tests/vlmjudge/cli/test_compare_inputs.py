"""`vlmjudge compare` under hostile input (issue 50, items 1 and 5): every record is checked by the one
record schema and every setting before any resampling, and what it cannot use is one line on stderr
naming the file and line, exit status 2, no traceback; an interrupt says nothing of a response cache."""
from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

import vlmjudge
from vlmjudge.cli import main as vlmjudge_main
from vlmjudge.outputs import manifest_path
from vlmjudge.run_records import RunFileError

RESAMPLES = ["--resamples", "50"]


def record(k: int, score: float | None = 0.5, status: str = "scored") -> dict:
    """A TerraVis record of the shared schema: id, status, score, then the method's own fields."""
    checks = [{"type_id": "support_stability", "detected": k % 3 == 0, "severity": "major" if k % 3 == 0 else None}]
    return {"id": f"img{k}.png", "status": status, "score": score, "checks": checks if status == "scored" else [],
            "meta": {"style": "photorealistic" if k % 2 else "stylized"}}


def write_run(folder: Path, lines: list[str], manifest: object = None) -> Path:
    """A run file of raw lines (hostile ones included) with its manifest beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "records.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    manifest = {"method": "terravis", "model": "judge/x"} if manifest is None else manifest
    manifest_path(path).write_text(json.dumps(manifest), encoding="utf-8")
    return path


def good_lines(shift: float = 0.0, n: int = 12) -> list[str]:
    return [json.dumps(record(k, round(0.2 + 0.05 * k + shift, 3) % 1.0)) for k in range(n)]


@pytest.fixture
def runs(tmp_path):
    """Two good TerraVis runs over the same 12 images."""
    return write_run(tmp_path / "a", good_lines()), write_run(tmp_path / "b", good_lines(0.02))


def compare(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = vlmjudge_main(["compare", *argv])
    return code, out.getvalue(), err.getvalue()


def refused(argv: list[str]) -> str:
    """The one stderr line of a refused comparison (status 2, no traceback, nothing written)."""
    code, _, err = compare(argv)
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_two_good_runs_compare(runs, tmp_path):
    code, out, err = compare([str(runs[0]), str(runs[1]), "--out", str(tmp_path / "cmp"), *RESAMPLES])
    assert code == 0, err
    result = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert [row["n"] for row in result["leaderboard"]] == [12, 12] and out.startswith("1. ")


#: A record line that cannot be used -> words its refusal must hold (issue 50, item 1 and item 5).
HOSTILE_LINES = {
    "Infinity score": ('{"id": "img3.png", "status": "scored", "score": Infinity}', "Infinity"),
    "-Infinity score": ('{"id": "img3.png", "status": "scored", "score": -Infinity}', "Infinity"),
    "NaN score": ('{"id": "img3.png", "status": "scored", "score": NaN}', "NaN"),
    "1e308 score": ('{"id": "img3.png", "status": "scored", "score": 1e308}', "outside terravis's score range 0 to 1"),
    "1e400 score": ('{"id": "img3.png", "status": "scored", "score": 1e400}', "beyond a float's range"),
    "10**400 score": ('{"id": "img3.png", "status": "scored", "score": 1' + "0" * 400 + "}", "too large for a number"),
    "unknown status": ('{"id": "img3.png", "status": "weird", "score": 0.5}', "'weird' is not one of"),
    "bool score": ('{"id": "img3.png", "status": "scored", "score": true}', "score True is not a number"),
    "string score": ('{"id": "img3.png", "status": "scored", "score": "0.5"}', "is not a number (str)"),
    "scored with a null score": ('{"id": "img3.png", "status": "scored", "score": null}', "needs a score"),
    "record without id": ('{"status": "scored", "score": 0.5}', "has no 'id'"),
    "NaN inside a record": ('{"id": "img3.png", "status": "scored", "score": 0.5, "checks": [{"prob": NaN}]}', "NaN"),
    "duplicate id": (json.dumps(record(0)), "id 'img0.png' appears twice"),
    "a list for a record": ("[1, 2, 3]", "expected a JSON object, got list"),
    "a number for a record": ("42", "expected a JSON object, got int"),
    "broken JSON": ('{"id": "img3.png", "status": ', "not valid JSON"),
    "a field the statistic cannot read": ('{"id": "img3.png", "status": "scored", "score": 0.5, "meta": "x"}',
                                          "the statistic 'mean score' cannot read this record"),
}


@pytest.mark.parametrize("case", HOSTILE_LINES)
def test_a_record_it_cannot_use_is_one_line_naming_file_and_line(case, runs, tmp_path):
    line, words = HOSTILE_LINES[case]
    lines = good_lines(0.02)
    lines[3] = line
    bad = write_run(tmp_path / "bad", lines)
    err = refused([str(runs[0]), str(bad), "--out", str(tmp_path / "cmp"), *RESAMPLES])
    assert words in err and f"{bad}:4" in err, err
    assert not (tmp_path / "cmp").exists()


def test_a_binary_line_is_one_line(runs, tmp_path):
    bad = write_run(tmp_path / "bad", good_lines())
    bad.write_bytes(bad.read_bytes() + b"\xff\xfe\x00\x81 garbage\n")
    err = refused([str(runs[0]), str(bad), "--out", str(tmp_path / "cmp")])
    assert f"{bad}:13" in err and "not UTF-8 text" in err


@pytest.mark.parametrize("case, words", [
    ("missing run", "no such file"), ("folder as run", "is a folder; give the run's records file"),
    ("empty run", "holds no records"), ("blank run", "holds no records"),
    ("manifest that is a list", "a manifest must be a JSON object"), ("manifest not JSON", "not valid JSON"),
])
def test_a_run_it_cannot_read_is_one_line(case, words, runs, tmp_path):
    path = {"missing run": lambda: tmp_path / "gone" / "records.jsonl",
            "folder as run": lambda: runs[1].parent,
            "empty run": lambda: write_run(tmp_path / "empty", []),
            "blank run": lambda: write_run(tmp_path / "blank", ["", "   "]),
            "manifest that is a list": lambda: write_run(tmp_path / "listed", good_lines(), manifest=[1, 2]),
            "manifest not JSON": lambda: write_run(tmp_path / "broken", good_lines(), manifest="{")}[case]()
    if case == "manifest not JSON":
        manifest_path(path).write_text("{", encoding="utf-8")
    assert words in refused([str(runs[0]), str(path), "--out", str(tmp_path / "cmp")])


@pytest.mark.parametrize("flags, words", [
    (["--resamples", "0"], "--resamples must lie in 1..100000"),
    (["--resamples", "100000000"], "--resamples must lie in 1..100000"),
    (["--confidence", "2"], "--confidence must lie strictly between 0 and 1"),
    (["--confidence", "nan"], "--confidence must lie strictly between 0 and 1"),
    (["--seed", "-1"], "--seed must be a whole number of at least 0"),
    (["--labels", "only-one"], "give one distinct, non-empty label per run"),
    (["--labels", "same,same"], "give one distinct, non-empty label per run"),
    (["--labels", "a,"], "give one distinct, non-empty label per run"),
    (["--method", "fager"], "method 'fager' was given, but the runs' manifests say 'terravis'"),
])
def test_a_bad_setting_is_one_line(flags, words, runs, tmp_path):
    assert words in refused([str(runs[0]), str(runs[1]), "--out", str(tmp_path / "cmp"), *flags])
    assert not (tmp_path / "cmp").exists()


def test_an_unknown_method_is_one_line(tmp_path):
    bare = [write_run(tmp_path / name, good_lines(), manifest={}) for name in ("a", "b")]
    err = refused([str(bare[0]), str(bare[1]), "--out", str(tmp_path / "cmp"), "--method", "no-such-method"])
    assert "no method 'no-such-method'; registered:" in err
    assert "cannot tell the runs' method" in refused([str(bare[0]), str(bare[1]), "--out", str(tmp_path / "cmp")])


def test_one_run_or_the_same_run_twice_is_one_line(runs, tmp_path):
    assert "at least two runs" in refused([str(runs[0]), "--out", str(tmp_path / "cmp")])
    assert "the same run is given twice" in refused([str(runs[0]), str(runs[0]), "--out", str(tmp_path / "c")])
    relinked = tmp_path / "again" / "records.jsonl"
    relinked.parent.mkdir()
    relinked.symlink_to(runs[0])
    assert "the same run is given twice" in refused([str(runs[0]), str(relinked), "--out", str(tmp_path / "c")])


def test_an_out_it_cannot_write_is_one_line_before_any_work(runs, tmp_path):
    taken = tmp_path / "taken.txt"
    taken.write_text("not a folder")
    assert f"--out {taken} is a file" in refused([str(runs[0]), str(runs[1]), "--out", str(taken)])
    assert "which is a file" in refused([str(runs[0]), str(runs[1]), "--out", str(taken / "sub")])
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert "not writable" in refused([str(runs[0]), str(runs[1]), "--out", str(locked / "cmp")])


def test_allow_mixed_never_admits_runs_of_different_methods(runs, tmp_path):
    fager = write_run(tmp_path / "fager", good_lines(), manifest={"method": "fager", "model": "judge/x"})
    for extra in ([], ["--allow-mixed"]):
        err = refused([str(runs[0]), str(fager), "--out", str(tmp_path / "cmp"), *extra])
        assert "runs of different methods (a: terravis, fager: fager)" in err


def test_an_interrupt_mentions_no_response_cache(runs, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr("vlmjudge.cli.compare.compare", interrupted)
    code, _, err = compare([str(runs[0]), str(runs[1]), "--out", str(tmp_path / "cmp")])
    assert code == 130 and "cache" not in err and "only when it is complete" in err


def test_records_given_in_python_are_checked_the_same_way():
    good = [record(k) for k in range(5)]
    for bad, words in ((dict(record(1), score=float("inf")), "run1 record 2: field score is inf"),
                       (dict(record(1), score=True), "run1 record 2: score True is not a number"),
                       ({"status": "scored", "score": 0.5}, "run1 record 2: a record starts with id"),
                       (dict(record(1), checks=[{"prob": float("nan")}]), "field checks[0].prob is nan")):
        with pytest.raises(RunFileError, match=words.replace("[", r"\[").replace("]", r"\]")):
            vlmjudge.compare([good, [good[0], bad, *good[2:]]], method="terravis", n_resamples=20)
