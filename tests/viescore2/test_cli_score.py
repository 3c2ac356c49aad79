"""`vlmjudge viescore2 score`: images and prompts in, records JSONL, manifest and overlays out;
the records feed `vlmjudge viescore2 evaluate` directly."""
import json

import pytest
from PIL import Image

from viescore2 import VIEScore2
from viescore2.asking import make_items
from vlmjudge.backends.replay import ReplayJudge, record_answers
from vlmjudge.cli import main
from vlmjudge.requests import Answer

from interval_checks import check_printed

TEXTS = {"cat": "score: 7/10\nr1: 1,2\nr2: 2", "dog": "score: 3/10\nnone", "cow": "no idea"}


@pytest.fixture
def workspace(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    for i, name in enumerate(TEXTS):
        Image.new("RGB", (32, 48), (60 * i, 100, 100)).save(images / f"{name}.png")
    (tmp_path / "source.png").write_bytes((images / "cat.png").read_bytes())
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "cat", "prompt": "a cat", "conditioning": ["source.png"]}\n'
                       '{"id": "dog", "prompt": "a dog"}\n{"id": "cow", "prompt": "a cow"}\n')
    # replay by content hash: the answers belong to exactly the requests the command will send
    scorer = VIEScore2(ReplayJudge({}), fields="overall+grid", grid_size=8)
    paths = [str(images / f"{k}.png") for k in TEXTS]
    items = make_items(paths, ["a cat", "a dog", "a cow"], [[str(tmp_path / "source.png")], None, None], list(TEXTS))
    answers = tmp_path / "answers.jsonl"
    record_answers(scorer.requests(items), [Answer(t) for t in TEXTS.values()], answers)
    return tmp_path, images, prompts, answers


def test_score_writes_records_manifest_and_overlays(workspace, capsys):
    tmp, images, prompts, answers = workspace
    out = tmp / "out" / "results.jsonl"
    code = main(["viescore2", "score", str(images), "--prompts", str(prompts), "--fields", "overall+grid",
                 "--grid-size", "8", "--backend", "replay", "--model", str(answers), "--out", str(out),
                 "--overlays", str(tmp / "overlays")])
    assert code == 0, capsys.readouterr().err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["cat.png", "cow.png", "dog.png"]  # folder order, relative paths
    cat, cow, dog = records
    assert cat["score"] == 7.0 and cat["grid"] == "r1: 1,2\nr2: 2" and cat["num_conditioning"] == 1
    assert dog["score"] == 3.0 and dog["grid_status"] == "none"
    assert cow["status"] == "failed" and cow["score"] is None and cow["missing"] == ["score", "grid"]
    manifest = json.loads((tmp / "out" / "results.manifest.json").read_text())
    assert manifest["fields"] == "overall+grid" and manifest["grid_size"] == 8 and manifest["counts"]["images"] == 3
    assert manifest["inputs"] == [str(images)]  # where the report finds each record's image for its thumbnail
    printed = capsys.readouterr().out
    assert "scored 2, not applicable 0, failed 1 of 3" in printed and "parse_failures  2" in printed
    check_printed(printed, "mean ", [7.0, 3.0])  # the failed cow is left out: n=2
    overlays = sorted(p.name for p in (tmp / "overlays").iterdir())
    assert overlays == ["cat.png", "dog.png"]
    assert Image.open(tmp / "overlays" / "cat.png").size == (32, 48)

    # the records are a predictions file for `evaluate`
    refs = tmp / "gt.jsonl"
    refs.write_text('{"id": "cat", "grid": "r1: 1", "score": 8}\n{"id": "dog", "grid": "none", "score": 2}\n'
                    '{"id": "cow", "grid": "r3: 3", "score": 5}\n')
    assert main(["viescore2", "evaluate", str(out), "--references", str(refs), "--grid-size", "8",
                 "--out", str(tmp / "ev.json")]) == 0
    metrics = json.loads((tmp / "ev.json").read_text())["metrics"]
    assert (metrics["tp"], metrics["fp"], metrics["fn"]) == (1, 2, 1) and metrics["parse_failures"] == 1


def test_text_prompts_file_and_input_errors(workspace, capsys, tmp_path):
    tmp, images, _, answers = workspace
    lines = tmp / "prompts.txt"
    lines.write_text("a cat\na dog\n")
    base = ["viescore2", "score", str(images), "--backend", "replay", "--model", str(answers),
            "--out", str(tmp / "r.jsonl")]
    assert main(base + ["--prompts", str(lines)]) == 2
    assert "2 prompts for 3 images" in capsys.readouterr().err
    assert main(["viescore2", "score", str(tmp / "missing"), "--prompts", str(lines), "--model", "x",
                 "--out", "r.jsonl"]) == 2
    assert "no such image file or folder" in capsys.readouterr().err
    lines.write_text("a cat\na dog\na cow\n")
    assert main(base + ["--prompts", str(lines), "--fields", "overall+colour"]) == 2
    assert "bad fields key" in capsys.readouterr().err
