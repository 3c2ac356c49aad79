"""`vlmjudge viescore2 evaluate`: JSONL in, table and JSON out, PNG overlays."""
import argparse
import json
import shutil
import subprocess

import pytest
from PIL import Image

from viescore2.cli import configure

PREDICTIONS = [{"id": "a", "text": "score: 2/10\nr5: 9"}, {"id": "b", "text": "score: 8/10\nnone"},
               {"id": "c", "text": "pq: 6/10\nsc: 3/10\nartifact:\nr1: 1\nmisalign:\nnone"},
               {"id": "d", "text": "sorry, I cannot"}]
REFERENCES = [{"id": "b", "grid": "none", "score": 9},
              {"id": "a", "grid": "r5: 8,9!", "score": 3, "image": "a-image.png"},
              {"id": "c", "artifact": "r1: 1!", "misalign": "r2: 2", "pq": 5, "sc": 7},
              {"id": "d", "grid": "r1: 1", "score": 4}]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def run(argv):
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def files(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (64, 64), (90, 90, 90)).save(images / "a-image.png")
    Image.new("RGB", (32, 48), (200, 200, 200)).save(images / "c.jpg")
    return (write_jsonl(tmp_path / "pred.jsonl", PREDICTIONS), write_jsonl(tmp_path / "gt.jsonl", REFERENCES),
            images, tmp_path)


def test_evaluate_prints_table_writes_json_and_overlays(files, capsys):
    pred, gt, images, tmp = files
    code = run(["evaluate", pred, "--references", gt, "--out", str(tmp / "r.json"),
                "--overlays", str(tmp / "ov"), "--images", str(images)])
    assert code == 0
    out = capsys.readouterr()
    assert "micro_f1" in out.out and "grid_iou" in out.out and "n/a" in out.out  # srcc_sc has 1 pair
    result = json.loads((tmp / "r.json").read_text())
    m = result["metrics"]
    # union cells: a TP 1 FN 1; b clean; c TP 1 FN 1; d failure FN 1
    assert (m["tp"], m["fp"], m["fn"]) == (2, 0, 3)
    assert m["parse_failures"] == 1 and m["grid_iou"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert [e["id"] for e in result["examples"]] == ["b", "a", "c", "d"]
    assert result["examples"][3]["grid_status"] == "failed"
    assert sorted(p.name for p in (tmp / "ov").iterdir()) == ["a.png", "c.png"]  # b: no image, d: no grid
    assert Image.open(tmp / "ov" / "c.png").size == (32, 48)
    assert "overlay skipped for 'b'" in out.err and "overlay skipped for 'd'" in out.err


def test_input_errors_exit_2(files, capsys, tmp_path):
    pred, gt, images, tmp = files
    short = write_jsonl(tmp_path / "short.jsonl", PREDICTIONS[:2])
    assert run(["evaluate", short, "--references", gt]) == 2
    assert "ids differ" in capsys.readouterr().err
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "a", "grid": "r5: eight"}])
    assert run(["evaluate", write_jsonl(tmp_path / "p1.jsonl", PREDICTIONS[:1]), "--references", bad]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert run(["evaluate", pred, "--references", gt, "--overlays", str(tmp / "x")]) == 2


@pytest.mark.skipif(shutil.which("vlmjudge") is None, reason="the vlmjudge console script is not installed")
def test_console_script(files):
    pred, gt, _, tmp = files
    done = subprocess.run(["vlmjudge", "viescore2", "evaluate", pred, "--references", gt,
                           "--out", str(tmp / "cli.json")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "micro_f1" in done.stdout
    assert json.loads((tmp / "cli.json").read_text())["metrics"]["fn"] == 3
