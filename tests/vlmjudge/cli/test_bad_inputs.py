"""Issue 19, items 2 and 7, through every judging command: a folder with a truncated PNG, a text
file named .png, a 1x400 image and a 0-byte file among two good images (one under the recommended
64 px). Each CLI scores the good images, lists every bad file as `path: reason`, writes them to
its failures file, exits 3 (4 when nothing could be scored), prints no traceback, and with
`--on-error raise` stops before the model loads, naming the item's index and path."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from cli_bad_inputs_judge import LOAD_LOG_ENV, ConstantJudge
from vlmjudge.cli import main as vlmjudge_main
from vlmjudge.cli.exits import EXIT_NONE_SCORED, EXIT_SOME_FAILED, EXIT_USAGE, failures_path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
BACKEND = "cli_bad_inputs_judge:ConstantJudge"
DOWN = "cli_bad_inputs_judge:DownJudge"

GOOD = {"a_good": (64, 64), "b_small": (40, 40)}  # b_small is scored, and flagged
#: Each bad file and a word its reason must hold.
BAD = {"c_truncated": "truncated", "d_text": "not a known image format", "e_thin": "aspect ratio over 200",
       "f_empty": "0 bytes"}


def write_bad(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    whole = io.BytesIO()
    Image.new("RGB", (64, 64), (10, 200, 30)).save(whole, format="PNG", compress_level=0)
    (folder / "c_truncated.png").write_bytes(whole.getvalue()[: len(whole.getvalue()) // 2])
    (folder / "d_text.png").write_text("this is a text file, not a picture\n")
    Image.new("RGB", (1, 400), "white").save(folder / "e_thin.png")
    (folder / "f_empty.png").write_bytes(b"")
    return [folder / f"{name}.png" for name in BAD]


def write_good(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, (name, size) in enumerate(GOOD.items()):
        Image.new("RGB", size, (40 * k, 90, 160)).save(folder / f"{name}.png")
        paths.append(folder / f"{name}.png")
    return paths


def run_vlmjudge(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = vlmjudge_main(argv)
    return code, out.getvalue(), err.getvalue()


# -- one adapter per command: its argv over a folder, and the ids of what it wrote --------------

def terravis_cmd(folder, tmp, backend):
    out = tmp / "tv" / "results.jsonl"
    return ["terravis", "score", str(folder), "--model", "m", "--backend", backend, "--out", str(out),
            "--quiet", "--chunk-size", "1"], out


def terravis_records(out, _stdout):
    from terravis import load_records
    return {Path(r.id).stem: r.meta.get("resolution_note") for r in load_records(out)[0]}


def viescore2_cmd(folder, tmp, backend):
    prompts = tmp / "prompts.txt"
    prompts.write_text("".join(f"a picture of {p.stem}\n" for p in sorted(folder.iterdir())))
    out = tmp / "vs2" / "results.jsonl"
    return ["viescore2", "score", str(folder), "--prompts", str(prompts), "--fields", "overall",
            "--backend", backend, "--model", "m", "--out", str(out)], out


def viescore2_records(out, _stdout):
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {Path(r["id"]).stem: r.get("resolution_note") for r in rows}


def fager_cmd(folder, tmp, backend):
    from fager.qa_store import format_qa_csv
    from fager.schema import QAItem, QASet
    files = sorted(folder.iterdir())
    items = tmp / "items.csv"
    items.write_text("index,prompt,image\n" + "".join(f"{p.stem},a {p.stem},{p.relative_to(tmp)}\n" for p in files))
    qa = [QASet(index=p.stem, prompt=f"a {p.stem}",
                items=[QAItem(level="level_1", category="existence", importance="high",
                              question=f"Is a {p.stem} shown?", source_fact=f"A {p.stem} is shown")])
          for p in files]
    (tmp / "QA.csv").write_text(format_qa_csv(qa))
    out = tmp / "fager_run" / "details.jsonl"
    return ["fager", "score", str(items), "--qa", str(tmp / "QA.csv"), "--backend", backend, "--model", "m",
            "--out", str(out)], out


def fager_records(details, _stdout):
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    return {r["id"]: r["provenance"].get("resolution_note") for r in rows}


def compare_cmd(folder, tmp, backend, encoders):
    refs = tmp / "refs"
    write_good(refs)
    for name in BAD:  # every generated image has a readable reference of the same stem
        Image.new("RGB", (64, 64), "gray").save(refs / f"{name}.png")
    out = tmp / "pairs.csv"
    return ["regeneration", "compare", str(refs), str(folder), "--json", "--csv", str(out),
            "--clip-model", encoders["clip"], "--dino-model", encoders["dino"], "--encoder-device", "cpu",
            "--backend", backend, "--model", "m"], out


def compare_records(_csv, stdout):
    return {Path(p["id"]).stem: p.get("resolution_note") for p in json.loads(stdout)["pairs"]}


def baseline_cmd(name):
    """`vqascore score` or `tifa score` over the folder, each image with its prompt (and, for TIFA, one question)."""
    def build(folder, tmp, backend):
        stems = sorted(p.stem for p in folder.iterdir())
        prompts = tmp / "prompts.jsonl"
        prompts.write_text("".join(json.dumps({"id": s, "prompt": f"a picture of {s}"}) + "\n" for s in stems))
        qa = tmp / "qa.json"
        qa.write_text(json.dumps([{"id": s, "caption": f"a picture of {s}", "question": "is this a picture?",
                                   "choices": ["yes", "no"], "answer": "yes", "element_type": "object",
                                   "element": "picture"} for s in stems]))
        out = tmp / name / "results.jsonl"
        options = ["--method-option", f"qa={qa}"] if name == "tifa" else []
        return [name, "score", str(folder), "--prompts", str(prompts), *options, "--backend", backend,
                "--model", "m", "--out", str(out)], out
    return build


def baseline_records(out, _stdout):
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {Path(r["id"]).stem: r["meta"].get("resolution_note") for r in rows}


COMMANDS = {"terravis score": (terravis_cmd, terravis_records), "viescore2 score": (viescore2_cmd, viescore2_records),
            "fager score": (fager_cmd, fager_records), "regeneration compare": (compare_cmd, compare_records),
            "vqascore score": (baseline_cmd("vqascore"), baseline_records),
            "tifa score": (baseline_cmd("tifa"), baseline_records)}


@pytest.fixture
def encoders(tiny_encoder_dirs):
    """{"clip": folder, "dino": folder}, the name these tests use for the shared pair."""
    return tiny_encoder_dirs


def command(name, folder, tmp, backend, encoders):
    build, read = COMMANDS[name]
    argv, out = build(folder, tmp, backend, encoders) if name == "regeneration compare" else build(folder, tmp, backend)
    return argv, out, read


def assert_lists_bad_files(err: str, bad: list[Path]) -> None:
    assert "Traceback" not in err
    for path in bad:
        line = next((ln for ln in err.splitlines() if ln.strip().startswith(f"{path}: ")), None)
        assert line is not None, f"{path} is not listed as 'path: reason' in:\n{err}"
        assert BAD[path.stem] in line, line


def failure_file_paths(out: Path) -> list[str]:
    return [json.loads(line)["item"] for line in failures_path(out).read_text().splitlines()]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_good_images_scored_bad_ones_listed_and_exit_3(name, tmp_path, encoders):
    folder = tmp_path / "images"
    write_good(folder)
    bad = write_bad(folder)
    argv, out, read = command(name, folder, tmp_path, BACKEND, encoders)
    code, stdout, err = run_vlmjudge(argv)
    assert code == EXIT_SOME_FAILED, err
    assert_lists_bad_files(err, bad)
    notes = read(out, stdout)
    assert sorted(notes) == sorted(GOOD)  # the good images, and nothing else, have results
    assert notes["a_good"] is None and "low resolution: 40x40" in notes["b_small"]
    assert failure_file_paths(out) == [str(p) for p in bad]
    assert not list(tmp_path.rglob("*.partial"))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_only_bad_images_exit_4_before_the_model_loads(name, tmp_path, encoders):
    folder = tmp_path / "images"
    bad = write_bad(folder)
    argv, out, _ = command(name, folder, tmp_path, BACKEND, encoders)
    loads = ConstantJudge.loads
    code, _, err = run_vlmjudge(argv)
    assert code == EXIT_NONE_SCORED, err
    assert_lists_bad_files(err, bad)
    assert ConstantJudge.loads == loads and failure_file_paths(out) == [str(p) for p in bad]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_on_error_raise_stops_before_the_model_with_index_and_path(name, tmp_path, encoders):
    folder = tmp_path / "images"
    write_good(folder)
    write_bad(folder)
    argv, out, _ = command(name, folder, tmp_path, BACKEND, encoders)
    loads = ConstantJudge.loads
    code, _, err = run_vlmjudge([*argv, "--on-error", "raise"])
    assert code == EXIT_USAGE and "Traceback" not in err
    (line,) = err.strip().splitlines()  # one line: the first bad file (index 2 after the two good ones)
    assert f"item 2: {folder / 'c_truncated.png'}: " in line and "truncated" in line
    assert ConstantJudge.loads == loads and not out.exists()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_backend_that_is_down_counts_every_item_as_failed(name, tmp_path, encoders):
    """Issue 19: "terravis score exits 0 with '0 scored, 3 failed' when the backend is down"."""
    folder = tmp_path / "images"
    good = write_good(folder)
    argv, out, _ = command(name, folder, tmp_path, DOWN, encoders)
    code, _, err = run_vlmjudge(argv)
    assert code == EXIT_NONE_SCORED, err
    assert "Traceback" not in err and failure_file_paths(out) == [str(p) for p in good]
    assert all(f"{p}: " in err for p in good)


def test_help_documents_the_policy_and_exit_statuses():
    for argv in (["terravis", "score"], ["viescore2", "score"], ["fager", "score"], ["regeneration", "compare"]):
        code, stdout, _ = run_help(argv)
        assert code == 0 and "--on-error {skip,raise}" in stdout, argv
        flat = " ".join(stdout.split())
        assert "3 some items were skipped" in flat and "4 no item got a result" in flat, argv


def run_help(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stop:
        vlmjudge_main([*argv, "--help"])
    return stop.value.code, out.getvalue(), ""


def test_interrupted_run_keeps_what_it_says_it_saved(tmp_path):
    folder = tmp_path / "images"
    write_good(folder)
    argv, out = terravis_cmd(folder, tmp_path, "cli_bad_inputs_judge:InterruptedJudge")
    code, _, err = run_vlmjudge(argv)
    assert code == 130 and "Traceback" not in err
    assert f"interrupted: 1 result(s) finished and saved to {out}" in err and "a rerun resumes" in err
    assert len(out.read_text().splitlines()) == 1 and not list(tmp_path.rglob("*.partial"))
    assert json.loads(out.with_name("results.manifest.json").read_text())["partial"] is True
    # the rerun resumes: the first image's answers come from the response cache
    code, stdout, _ = run_vlmjudge([a if a != "cli_bad_inputs_judge:InterruptedJudge" else BACKEND for a in argv])
    assert code == 0 and "answers from an earlier run: 0," not in stdout


# -- python -m vlmjudge.distributed, in its own process as under a launcher --------------------

def run_distributed(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO), os.environ.get("PYTHONPATH", "")]),
           LOAD_LOG_ENV: str(tmp / "loads.log")}
    return subprocess.run([sys.executable, "-m", "vlmjudge.distributed", "terravis", *args], env=env, cwd=tmp,
                          capture_output=True, text=True, timeout=300)


def test_distributed_runner_applies_the_same_policy(tmp_path):
    folder = tmp_path / "images"
    write_good(folder)
    bad = write_bad(folder)
    out = tmp_path / "records.jsonl"
    base = ["--input", str(folder), "--output", str(out), "--model", "m", "--backend", BACKEND]
    done = run_distributed(base, tmp_path)
    assert done.returncode == EXIT_SOME_FAILED, done.stderr
    assert_lists_bad_files(done.stderr, bad)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["a_good.png", "b_small.png"]  # the file names, as unfiltered
    # where terravis score puts it: in the record's meta
    assert "resolution_note" not in records[1] and "resolution_note" not in records[0]["meta"]
    assert "40x40" in records[1]["meta"]["resolution_note"]
    assert failure_file_paths(out) == [str(p) for p in bad]
    assert (tmp_path / "loads.log").read_text().split() == ["ConstantJudge"]

    raised = run_distributed([*base, "--on-error", "raise"], tmp_path)
    assert raised.returncode == EXIT_USAGE and "Traceback" not in raised.stderr
    assert f"item 2: {folder / 'c_truncated.png'}" in raised.stderr
    assert (tmp_path / "loads.log").read_text().split() == ["ConstantJudge"]  # no second load

    for path in folder.glob("[ab]_*.png"):
        path.unlink()
    nothing = run_distributed(base, tmp_path)
    assert nothing.returncode == EXIT_NONE_SCORED and "Traceback" not in nothing.stderr
    assert_lists_bad_files(nothing.stderr, bad)
    assert not list(tmp_path.rglob("*.partial"))


def test_a_tiny_qwen3_vl_scores_the_good_images_of_the_bad_folder(tmp_path, tiny_vlm_path):
    """A real (tiny, random) Qwen3-VL through the transformers backend: the pre-load check keeps
    the 1x400 image, which its processor cannot resize, out of the batch; the 40 px image is scored."""
    pytest.importorskip("xgrammar")
    pytest.importorskip("vlmjudge.backends.hf.judge")
    model = tiny_vlm_path("qwen3_vl")
    folder = tmp_path / "images"
    write_good(folder)
    bad = write_bad(folder)
    argv, out = viescore2_cmd(folder, tmp_path, "transformers")
    argv = [str(model) if a == "m" else a for a in argv]
    code, _, err = run_vlmjudge([*argv, "--device", "cpu"])
    assert code == EXIT_SOME_FAILED, err
    assert_lists_bad_files(err, bad)
    rows = {Path(r["id"]).stem: r for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(rows) == sorted(GOOD) and all(r["finish_reason"] != "error" for r in rows.values())
    assert "resolution_note" not in rows["a_good"] and "40x40" in rows["b_small"]["resolution_note"]
