"""`regeneration compare` (issue 23 part 5): unpaired files are listed by name and counted, --out
writes the JSON result, the plain output shows every metric (the MLLM ratings too), raw 1-5
ratings and their 0..1 values go under different names, and a rerun says it is resuming."""
from __future__ import annotations

import csv
import json

import pytest
from PIL import Image

from interval_checks import check_printed
from regen_helpers import META_KEYS, reference_images, write_answers_jsonl
from vlmjudge.cli import main as vlmjudge_main

#: One answer per stage and pair: pair "0" (a_cat) gets 5 and 2, pair "1" (b_dog) 3 and 4.
RATINGS = {("content", "0"): 5, ("perceptual", "0"): 2, ("content", "1"): 3, ("perceptual", "1"): 4}


@pytest.fixture
def folders(tmp_path):
    """Two pairs (a_cat, b_dog), a reference with no regeneration (c_owl) and a regeneration with no
    reference (z_extra)."""
    images = list(reference_images(4).values())
    refs, gens = tmp_path / "refs", tmp_path / "gens"
    refs.mkdir()
    gens.mkdir()
    for name, image in zip(("a_cat", "b_dog", "c_owl"), images):
        image.save(refs / f"{name}.png")
    images[1].save(gens / "a_cat.png")
    images[0].save(gens / "b_dog.png")
    images[3].save(gens / "z_extra.png")
    return refs, gens


def run_cli(argv: list[str]) -> int:
    return vlmjudge_main(["regeneration", *argv])


def encoder_flags(encoder_dirs):
    return ["--clip-model", encoder_dirs["clip"], "--dino-model", encoder_dirs["dino"], "--encoder-device", "cpu"]


def judge_flags(tmp_path):
    rows = {}
    for (stage, item), rating in RATINGS.items():
        key = {"stage": stage, "item": item, "round": 0, "index": 0}
        rows[tuple(key.get(k) for k in META_KEYS)] = json.dumps({"reason": "ok", "score": rating})
    answers = write_answers_jsonl(rows, tmp_path / "answers.jsonl")
    return ["--model", answers, "--backend", "regen_helpers:MetaReplayJudge"]


def test_unpaired_files_are_listed_by_name_and_counted(folders, encoder_dirs, tmp_path, capsys):
    refs, gens = folders
    assert run_cli(["compare", str(refs), str(gens), *encoder_flags(encoder_dirs)]) == 0
    captured = capsys.readouterr()
    assert "unpaired: 2 file(s) left out" in captured.err
    assert "no generated image for c_owl.png" in captured.err and "no reference for z_extra.png" in captured.err
    assert "mean over 2 pairs" in captured.out and "left out: 2 unpaired file(s)" in captured.out
    assert run_cli(["compare", str(refs), str(gens), "--json", *encoder_flags(encoder_dirs)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["summary"]["unpaired"] == 2
    assert shown["unpaired_files"] == {"references_only": ["c_owl.png"], "generated_only": ["z_extra.png"]}


@pytest.mark.parametrize("side", ["refs", "gens"])
def test_two_images_of_one_stem_are_refused_naming_both(folders, encoder_dirs, tmp_path, capsys, side):
    # pairing by stem would keep a_cat.png and drop a_cat.jpg without a word (issue 50)
    folder = dict(zip(("refs", "gens"), folders))[side]
    Image.open(folder / "a_cat.png").convert("RGB").save(folder / "a_cat.jpg")
    assert run_cli(["compare", str(folders[0]), str(folders[1]), *encoder_flags(encoder_dirs)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "share a file stem: a_cat.jpg and a_cat.png" in err and str(folder) in err


def test_out_writes_the_pair_rows_as_json_lines(folders, encoder_dirs, tmp_path, capsys):
    refs, gens = folders
    out = tmp_path / "result" / "pairs.jsonl"
    assert run_cli(["compare", str(refs), str(gens), "--out", str(out), "--json", *encoder_flags(encoder_dirs)]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert written == printed["pairs"]
    assert [p["id"] for p in written] == ["a_cat.png", "b_dog.png"]  # the reference file names
    manifest = json.loads((tmp_path / "result" / "pairs.manifest.json").read_text())
    assert manifest["summary"]["clip"] == pytest.approx(sum(p["clip"] for p in written) / 2)


def test_out_json_is_a_usage_error_naming_the_jsonl_file_and_json_flag(folders, encoder_dirs, tmp_path, capsys):
    refs, gens = folders
    out = tmp_path / "compare.json"
    assert run_cli(["compare", str(refs), str(gens), "--out", str(out), *encoder_flags(encoder_dirs)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert str(tmp_path / "compare.jsonl") in err and "--json" in err
    assert not out.exists()


def test_plain_output_has_every_metric_and_ratings_keep_their_names(folders, encoder_dirs, tmp_path, capsys):
    refs, gens = folders
    pairs_csv = tmp_path / "pairs.csv"
    argv = ["compare", str(refs), str(gens), "--csv", str(pairs_csv), *encoder_flags(encoder_dirs),
            *judge_flags(tmp_path)]
    assert run_cli(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    a_cat = next(line for line in lines if line.startswith("a_cat.png\t"))
    for word in ("score ", "CLIP ", "DINO ", "MLLM content 5/5 (1.000)", "MLLM perceptual 2/5 (0.2500)"):
        assert word in a_cat, a_cat
    mean = next(line for line in lines if line.startswith("mean over 2 pairs"))
    # the summary's MLLM means are of the 0..1 values: content (1 + 0.5) / 2, perceptual (0.25 + 0.75) / 2
    assert "MLLM (0..1) content 0.7500 [" in mean and "perceptual 0.5000 [" in mean and "0 MLLM parse failures" in mean
    assert run_cli([*argv, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    for label, key in (("score ", "score"), ("CLIP ", "clip"), ("DINO ", "dino"),
                       ("MLLM (0..1) content ", "mllm_content"), ("perceptual ", "mllm_perceptual")):
        check_printed(mean, label, [p[key] for p in shown["pairs"]])
    row = shown["pairs"][0]
    assert (row["mllm_content_rating"], row["mllm_perceptual_rating"]) == (5, 2)
    assert (row["mllm_content"], row["mllm_perceptual"]) == (1.0, 0.25)
    assert shown["summary"]["mllm_content"] == pytest.approx(0.75)
    with open(pairs_csv, newline="") as fh:
        header = next(csv.reader(fh))
    assert header[:5] == ["id", "status", "score", "clip", "dino"] and "mllm_content_rating" in header


def test_rerun_with_a_cache_says_it_is_resuming(folders, encoder_dirs, tmp_path, capsys):
    refs, gens = folders
    argv = ["compare", str(refs), str(gens), "--out", str(tmp_path / "pairs.jsonl"), "--cache",
            str(tmp_path / "answers.sqlite"), *encoder_flags(encoder_dirs), *judge_flags(tmp_path)]
    assert run_cli(argv) == 0
    assert "resuming" not in capsys.readouterr().err
    assert run_cli(argv) == 0
    assert "resuming: 2 of 2 done" in capsys.readouterr().err


def test_help_names_the_rating_columns_and_defaults(capsys):
    with pytest.raises(SystemExit):
        run_cli(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "mllm_content_rating" in text and "normalised to 0..1" in text
    assert "listed by name and counted as unpaired" in text
    assert "--out OUT the pair rows as JSON lines (a .jsonl file), the manifest beside them" in text


def test_no_image_of_either_size_is_dropped_without_a_word(tmp_path, encoder_dirs, capsys):
    refs, gens = tmp_path / "r", tmp_path / "g"
    refs.mkdir()
    gens.mkdir()
    Image.new("RGB", (32, 32), "red").save(refs / "x.png")
    Image.new("RGB", (32, 32), "blue").save(gens / "y.png")
    assert run_cli(["compare", str(refs), str(gens), *encoder_flags(encoder_dirs)]) == 2
    assert "no file stems shared" in capsys.readouterr().err
