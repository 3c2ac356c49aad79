"""Issue 50, item 9: a file name that is not UTF-8 is scored under an id that text can hold and that
leads back to the file, and its report is written whole; a report writer that fails midway leaves the
earlier report as it was, never a 0-byte report.html."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image

from test_bad_inputs import run_vlmjudge
from vlmjudge.cli.intake import image_items
from vlmjudge.outputs import id_from_name, name_from_id
from vlmjudge.reports.items import find_image

BACKEND = "cli_bad_inputs_judge:ConstantJudge"
#: "café" in Latin-1: bytes no UTF-8 decoder reads.
LATIN1_NAME = b"caf\xe9.png"


def _folder_with_a_latin1_name(tmp_path: Path) -> Path:
    folder = tmp_path / "images"
    folder.mkdir()
    try:
        Image.new("RGB", (64, 64), (200, 40, 40)).save(os.path.join(os.fsencode(folder), LATIN1_NAME))
    except (OSError, UnicodeError):  # a file system that takes only UTF-8 names (macOS, Windows)
        pytest.skip("this file system refuses a file name that is not UTF-8")
    Image.new("RGB", (64, 64), (40, 200, 40)).save(folder / "plain.png")
    return folder


@pytest.mark.parametrize("raw", [b"caf\xe9.png", b"a\\xe9.png", b"back\\slash.png", b"\xff\xfe/x\\\\y.png",
                                 "café/猫.png".encode(), b"end\\"])
def test_an_id_round_trips_to_the_same_file_name(raw):
    name = os.fsdecode(raw)
    item_id = id_from_name(name)
    item_id.encode("utf-8")  # text any JSON writer or HTML page holds: no lone surrogate
    assert os.fsencode(name_from_id(item_id)) == raw


def test_ids_of_distinct_names_stay_distinct():
    """A literal backslash-x in a UTF-8 name and a Latin-1 byte never share an id."""
    names = [os.fsdecode(b"caf\xe9.png"), "caf\\xe9.png", "caf\\\\xe9.png"]
    assert len({id_from_name(n) for n in names}) == 3
    assert id_from_name("plain/cat.png") == "plain/cat.png"  # every usual name is its own id


def test_an_older_run_s_surrogate_id_still_finds_its_file(tmp_path):
    folder = _folder_with_a_latin1_name(tmp_path)
    assert find_image("caf\udce9.png", [folder]) is not None  # how ids were written before
    assert find_image(id_from_name(os.fsdecode(LATIN1_NAME)), [folder]) is not None
    assert find_image("caf\ud800.png", [folder]) is None  # a surrogate no byte stands for: no file, no error


def test_a_non_utf8_file_name_is_scored_and_reported(tmp_path):
    folder = _folder_with_a_latin1_name(tmp_path)
    assert sorted(item for item, _ in image_items([folder])) == ["caf\\xe9.png", "plain.png"]
    out = tmp_path / "run" / "records.jsonl"
    code, _, err = run_vlmjudge(["terravis", "score", str(folder), "--backend", BACKEND, "--model", "m",
                                 "--out", str(out), "--quiet"])
    assert code == 0, err
    records = {json.loads(line)["id"]: json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()}
    assert set(records) == {"caf\\xe9.png", "plain.png"}
    for item_id in records:
        item_id.encode("utf-8")  # no lone surrogate in an id
    assert (folder / name_from_id("caf\\xe9.png")).is_file()  # the id leads back to its file

    report = tmp_path / "report"
    report.mkdir()
    (report / "report.html").write_text("the earlier report")
    code, printed, err = run_vlmjudge(["terravis", "report", str(out), "--out", str(report)])
    assert code == 0, err
    page = (report / "report.html").read_text(encoding="utf-8")
    assert "caf\\xe9.png" in page and page.count("data:image/jpeg") == 2  # both thumbnails found
    assert "wrote " + str(report / "report.html") in printed
    assert sorted(p.name for p in report.iterdir() if p.name.startswith(".")) == []  # no scratch left


def test_a_report_writer_that_fails_midway_leaves_the_earlier_report(tmp_path, monkeypatch):
    folder = _folder_with_a_latin1_name(tmp_path)
    earlier_run, out = tmp_path / "earlier.jsonl", tmp_path / "records.jsonl"
    assert run_vlmjudge(["terravis", "score", str(folder / "plain.png"), "--backend", BACKEND, "--model", "m",
                         "--out", str(earlier_run), "--quiet"])[0] == 0
    assert run_vlmjudge(["terravis", "score", str(folder), "--backend", BACKEND, "--model", "m",
                         "--out", str(out), "--quiet"])[0] == 0
    report = tmp_path / "report"
    assert run_vlmjudge(["terravis", "report", str(earlier_run), "--out", str(report)])[0] == 0
    earlier = {p.name: p.read_bytes() for p in report.iterdir()}
    assert b'"n_images": 1' in earlier["summary.json"]  # the new run's summary would differ

    import terravis.figures

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(terravis.figures, "plot_score_histogram", disk_full)  # after summary.json and CSV
    code, _, err = run_vlmjudge(["terravis", "report", str(out), "--out", str(report)])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "No space left" in err
    assert {p.name: p.read_bytes() for p in report.iterdir()} == earlier  # every file as it was, no scratch


def test_a_folder_where_the_report_writes_a_file_changes_nothing(tmp_path):
    folder = _folder_with_a_latin1_name(tmp_path)
    out = tmp_path / "records.jsonl"
    assert run_vlmjudge(["terravis", "score", str(folder), "--backend", BACKEND, "--model", "m",
                         "--out", str(out), "--quiet"])[0] == 0
    report = tmp_path / "report"
    (report / "report.html").mkdir(parents=True)
    code, _, err = run_vlmjudge(["terravis", "report", str(out), "--out", str(report)])
    assert code == 2 and "is a folder" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in report.iterdir()) == ["report.html"]  # nothing moved in beside it
