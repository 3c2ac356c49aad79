"""A model with missing and corrupt images: the missing prompts are listed and get no record, a
corrupt file is a counted failure (never a score), and the other model's runs are whole; an
option the method refuses, or --on-error raise, ends the run in one line before anything is scored."""
import json

import pytest

from vlmjudge.cli import main
from vlmjudge.outputs import read_run


@pytest.fixture
def folders(tmp_path, write_prompts):
    """p0..p3; model `full` has all four photos, `gappy` lacks p2 and has a corrupt p1."""
    from PIL import Image

    write_prompts(tmp_path / "p.csv", ["p0", "p1", "p2", "p3"])
    colours = {"full": ("red", "green", "blue", "orange"), "gappy": ("purple", "cyan", "yellow", "white")}
    for model in ("full", "gappy"):
        (tmp_path / model).mkdir()
        for n, colour in enumerate(colours[model]):
            Image.new("RGB", (64, 64), colour).save(tmp_path / model / f"p{n}.png")
    (tmp_path / "gappy" / "p2.png").unlink()
    (tmp_path / "gappy" / "p1.png").write_bytes(b"\x89PNG broken")
    (tmp_path / "gappy" / "extra.png").write_bytes(b"")
    return tmp_path


def args(folders, demo_judge, *extra):
    return ["benchmark", "--prompts", str(folders / "p.csv"), "--model-images", f"full={folders / 'full'}",
            "--model-images", f"gappy={folders / 'gappy'}", "--methods", "terravis", "--judge", demo_judge,
            "--device", "cpu", "--out", str(folders / "out"), *extra]


def test_missing_prompts_are_listed_and_corrupt_images_counted(folders, demo_judge, board_calls, capsys):
    labels = folders / "labels.jsonl"
    labels.write_text('{"id": "p0", "human": 0.5}\n')
    status = main(args(folders, demo_judge, "--human", str(labels), "--resamples", "300", "--bootstrap-seed", "4"))
    err = capsys.readouterr().err
    assert status == 3, err  # some images got no result (the judging commands' status)
    assert "gappy: no image for 1 prompt(s), left out of its runs: p2" in err
    assert "gappy/p1:" in err and "skipped 1 item(s) as bad input" in err
    out = folders / "out"
    full, _ = read_run(out / "runs" / "full" / "terravis" / "records.jsonl")
    gappy, manifest = read_run(out / "runs" / "gappy" / "terravis" / "records.jsonl")
    assert [r["id"] for r in full] == ["p0", "p1", "p2", "p3"]
    assert [r["id"] for r in gappy] == ["p0", "p3"]  # no record for the missing or the corrupt image
    assert manifest["missing"] == ["p2"] and manifest["n_missing"] == 1 and manifest["n_skipped"] == 1
    assert manifest["n_items"] == 3 and manifest["n_scored"] == 2
    failures = [json.loads(line) for line in (out / "runs" / "gappy" / "terravis" /
                                              "records.jsonl.failures.jsonl").read_text().splitlines()]
    assert [(f["item"], f["bad_input"]) for f in failures] == [("p1", True)]
    bench = json.loads((out / "benchmark.json").read_text())
    gap = next(m for m in bench["models"] if m["name"] == "gappy")
    assert (gap["n_images"], gap["images"], gap["n_missing"], gap["missing"], gap["n_bad_images"]) == (3, 2, 1, ["p2"], 1)
    assert gap["unmatched_files"] == ["extra.png"] and gap["images_encoded"] == 2
    assert bench["exit_status"] == 3
    build = board_calls["build"][0]
    assert set(build["runs"]) == {"full", "gappy"}
    assert (build["human"], build["n_resamples"], build["seed"]) == ((str(labels), "labels"), 300, 4)


def test_on_error_raise_stops_at_the_corrupt_image_before_the_judge_loads(folders, demo_judge, board_calls, capsys):
    status = main(args(folders, demo_judge, "--on-error", "raise"))
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and "model gappy, item 1" in err and "p1.png" in err, err
    assert not (folders / "out" / "runs").exists()


def test_an_option_the_method_refuses_is_one_line_before_any_image_is_judged(folders, demo_judge, board_calls, capsys):
    status = main(args(folders, demo_judge, "--method-option", "terravis.variant=bogus"))
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err[-1].startswith("vlmjudge benchmark: error: method terravis cannot be built"), err
    assert "variant must be one of" in err[-1]
    assert not (folders / "out" / "runs").exists()


def test_no_readable_image_at_all_is_status_4_without_a_judge(folders, board_calls, capsys):
    for name in ("p0", "p3"):
        (folders / "gappy" / f"{name}.png").write_bytes(b"not an image")
    status = main(["benchmark", "--prompts", str(folders / "p.csv"), "--model-images", f"gappy={folders / 'gappy'}",
                   "--methods", "terravis", "--judge", str(folders / "no-judge-needed"), "--backend", "replay",
                   "--out", str(folders / "out")])
    err = capsys.readouterr().err
    assert status == 4 and "skipped 3 item(s) as bad input" in err, err


def test_a_method_without_a_judge_gets_the_suites_references(tmp_path, tiny_encoder_dirs, board_calls, capsys):
    """Image Regeneration (no default judge) on a prompts file with references: no judge is given
    or loaded, each model image is compared with its prompt's reference."""
    from PIL import Image

    (tmp_path / "refs").mkdir()
    (tmp_path / "gen").mkdir()
    for n, pid in enumerate(("a", "b")):
        Image.new("RGB", (64, 64), (60 * n, 100, 200)).save(tmp_path / "refs" / f"{pid}.png")
        Image.new("RGB", (64, 64), (200, 60 * n, 100)).save(tmp_path / "gen" / f"{pid}.png")
    (tmp_path / "p.csv").write_text("id,prompt,reference\na,a lake,refs/a.png\nb,a hill,refs/b.png\n")
    status = main(["benchmark", "--prompts", str(tmp_path / "p.csv"), "--model-images", f"m={tmp_path / 'gen'}",
                   "--methods", "regeneration", "--method-option", f"regeneration.clip_model={tiny_encoder_dirs['clip']}",
                   "--method-option", f"regeneration.dino_model={tiny_encoder_dirs['dino']}", "--device", "cpu",
                   "--out", str(tmp_path / "out")])
    assert status == 0, capsys.readouterr().err
    records, manifest = read_run(tmp_path / "out" / "runs" / "m" / "regeneration" / "records.jsonl")
    assert [r["id"] for r in records] == ["a", "b"] and all(r["clip"] is not None and r["mllm"] is None for r in records)
    bench = json.loads((tmp_path / "out" / "benchmark.json").read_text())
    assert bench["judge"] is None and bench["methods"][0]["judge"] is False and bench["cache"] is None
