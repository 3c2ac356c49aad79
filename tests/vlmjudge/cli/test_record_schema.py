"""Issue 43, item 3: every method's score command writes records that start with id, status and
score, with a status from one set and a score exactly when scored; prints one summary line; names
in --help the files it writes; and records in its manifest the settings it was given."""
from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from test_bad_inputs import BACKEND, COMMANDS, write_good
from vlmjudge.cli import build_parser
from vlmjudge.cli import main as vlmjudge_main
from vlmjudge.outputs import manifest_path, write_records
from vlmjudge.record_schema import RECORD_KEYS, STATUSES, RecordSchemaError

#: Answers "Yes", but never about the 40 x 40 image: each method must record that item as failed.
FLAKY = "cli_bad_inputs_judge:FailsOnSmallJudge"
SUMMARY = re.compile(r"scored (\d+), not applicable (\d+), failed (\d+) of (\d+)(?: \(\d+ skipped as bad input\))? · mean .+ · wrote (.+)")


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = vlmjudge_main(argv)
    return code, out.getvalue(), err.getvalue()


def score_argv(name: str, tmp: Path, backend: str, encoders) -> tuple[list[str], Path]:
    """The command over two good images (one of them 40 x 40), writing a records JSONL."""
    folder = tmp / "images"
    write_good(folder)
    if name == "regeneration compare":
        refs = tmp / "refs"
        write_good(refs)
        out = tmp / "pairs.jsonl"
        return ["regeneration", "compare", str(refs), str(folder), "--out", str(out), "--clip-model",
                encoders["clip"], "--dino-model", encoders["dino"], "--encoder-device", "cpu", "--backend", backend,
                "--model", "m"], out
    build = COMMANDS[name][0]
    return build(folder, tmp, backend)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_score_command_writes_the_shared_record_keys_and_statuses(name, tmp_path, tiny_encoder_dirs):
    argv, out = score_argv(name, tmp_path, FLAKY, tiny_encoder_dirs)
    code, stdout, stderr = run(argv)
    assert "Traceback" not in stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2
    for record in records:
        assert tuple(record)[:3] == RECORD_KEYS, record
        assert record["status"] in STATUSES
        assert (record["score"] is None) == (record["status"] != "scored"), record
    ids = sorted(Path(r["id"]).name for r in records)
    assert ids == ["a_good.png", "b_small.png"] or ids == ["a_good", "b_small"]  # FAGER: the CSV's index
    by_id = {Path(r["id"]).stem: r for r in records}
    if name == "viescore2 score":  # "Yes" holds no score: a parse failure, failed with its reason
        assert by_id["a_good"]["status"] == "failed" and "not read" in by_id["a_good"]["error"]
        assert "no answer" in by_id["b_small"]["error"]
    else:
        assert by_id["a_good"]["status"] == "scored"
    if name != "regeneration compare":  # compare's score is CLIP and DINO: the MLLM's failure leaves it scored
        assert by_id["b_small"]["status"] == "failed" and code != 0
    (line,) = [ln for ln in (stdout + stderr).splitlines() if SUMMARY.fullmatch(ln)]
    scored, not_applicable, failed, total, wrote = SUMMARY.fullmatch(line).groups()
    counts = {s: sum(r["status"] == s for r in records) for s in STATUSES}
    assert (int(scored), int(not_applicable), int(failed), int(total)) == (
        counts["scored"], counts["not_applicable"], counts["failed"], len(records))
    assert str(out) in wrote.split(", ") and str(manifest_path(out)) in wrote.split(", ")


def test_a_record_outside_the_schema_is_refused_at_write_time(tmp_path):
    out = tmp_path / "r.jsonl"
    with pytest.raises(RecordSchemaError, match="starts with id, status, score"):
        write_records(out, [{"image_id": "a.png", "status": "scored", "score": 1.0}])
    with pytest.raises(RecordSchemaError, match="'ok' is not one of"):
        write_records(out, [{"id": "a.png", "status": "ok", "score": 1.0}])
    with pytest.raises(RecordSchemaError, match="only a scored record has a score"):
        write_records(out, [{"id": "a.png", "status": "not_applicable", "score": 0.3}])
    assert not out.exists()


def subcommand_help(*path: str) -> str:
    """The --help text of `vlmjudge <path...>` (argparse prints it and exits)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([*path, "--help"])
    return " ".join(out.getvalue().split())


def test_terravis_score_usage_shows_out_as_required(tmp_path):
    text = subcommand_help("terravis", "score")
    assert re.search(r"(?<!\[)--out OUT(?!\])", text.split("positional arguments")[0])
    with contextlib.redirect_stderr(io.StringIO()) as err, pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["terravis", "score", str(tmp_path), "--model", "m"])
    assert stop.value.code == 2 and "--out" in err.getvalue()


@pytest.mark.parametrize("name", ["terravis score", "fager score"])
def test_help_names_the_files_written_and_the_manifest_the_chunk_size_given(name, tmp_path, tiny_encoder_dirs):
    argv, out = score_argv(name, tmp_path, BACKEND, tiny_encoder_dirs)
    code, _, err = run([*argv, "--chunk-size", "2"] if "--chunk-size" not in argv else argv)
    assert code == 0, err
    manifest = json.loads(manifest_path(out).read_text())
    assert manifest["chunk_size"] == (1 if name == "terravis score" else 2)  # terravis's adapter gives 1
    text = subcommand_help(*name.split())
    for path in out.parent.iterdir():  # every file the run left names itself in --help, by its suffix
        if path.name.endswith(("-shm", "-wal", "-journal")):  # SQLite's own files beside the answer cache
            continue
        suffix = path.name.removeprefix(out.stem) if path.name.startswith(out.stem) else path.name
        assert suffix in text or path.name in text, (path.name, text)
