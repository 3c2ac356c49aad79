"""One bad-input policy for every CLI, checked before a model loads; clean one-line command errors."""
import argparse
import io
import json
import subprocess
import sys
import textwrap

import pytest
from PIL import Image

from vlmjudge.cache import CacheFileError, ResponseCache
from vlmjudge.cli.errors import CommandError
from vlmjudge.cli.exits import (EXIT_NONE_SCORED, EXIT_OK, EXIT_SOME_FAILED, exit_status,
                                failures_path, report_failures)
from vlmjudge.cli.flags import judge_from_args
from vlmjudge.cli.intake import check_images
from vlmjudge.images import ImageInputError, resolution_note, to_pil


def bad_folder(root):
    """Good images beside a truncated PNG, a text file named .png, a 1x400 image and a 0-byte file."""
    root.mkdir()
    Image.new("RGB", (64, 64), "red").save(root / "good1.png")
    Image.new("RGB", (80, 48), "blue").save(root / "good2.png")
    Image.new("RGB", (20, 20), "green").save(root / "small.png")
    full = (root / "good1.png").read_bytes()
    (root / "truncated.png").write_bytes(full[: len(full) // 2])
    (root / "text.png").write_text("not an image at all\n")
    Image.new("RGB", (1, 400), "white").save(root / "sliver.png")
    (root / "empty.png").write_bytes(b"")
    return sorted(root.iterdir())


def test_bad_files_are_skipped_counted_and_named_with_their_reason(tmp_path):
    paths = bad_folder(tmp_path / "imgs")
    good, bad = check_images([(p.name, p) for p in paths])
    assert sorted(g.item for g in good) == ["good1.png", "good2.png", "small.png"]
    reasons = {f.item.rsplit("/", 1)[-1]: f.reason for f in bad}
    assert set(reasons) == {"truncated.png", "text.png", "sliver.png", "empty.png"}
    assert "aspect ratio" in reasons["sliver.png"]
    assert all(paths[f.index].name == f.item.rsplit("/", 1)[-1] for f in bad)  # index in the user's input
    small = next(g for g in good if g.item == "small.png")
    assert small.note and "low resolution" in small.note  # scored, but flagged
    assert next(g for g in good if g.item == "good1.png").note is None


def test_on_error_raise_names_index_and_path(tmp_path):
    paths = bad_folder(tmp_path / "imgs")
    with pytest.raises(ImageInputError) as caught:
        check_images([(p.name, p) for p in paths], on_error="raise")
    assert caught.value.index == [p.name for p in paths].index("empty.png")
    assert "empty.png" in str(caught.value)


def test_failures_are_printed_one_per_line_and_written_beside_the_output(tmp_path):
    paths = bad_folder(tmp_path / "imgs")
    _, bad = check_images([(p.name, p) for p in paths])
    stream = io.StringIO()
    written = report_failures(bad, tmp_path / "out" / "records.jsonl", stream)
    assert written == failures_path(tmp_path / "out" / "records.jsonl")
    rows = [json.loads(line) for line in written.read_text().splitlines()]
    assert [r["item"] for r in rows] == [f.item for f in bad]
    lines = stream.getvalue().splitlines()
    assert lines[0] == "skipped 4 item(s) as bad input:" and all(": " in line for line in lines[1:5])
    assert "Traceback" not in stream.getvalue()
    report_failures([], tmp_path / "out" / "records.jsonl", io.StringIO())  # a clean rerun
    assert not written.exists()


def test_exit_status_rule():
    assert exit_status(5, 5) == EXIT_OK and exit_status(5, 3) == EXIT_SOME_FAILED
    assert exit_status(5, 0) == EXIT_NONE_SCORED and EXIT_SOME_FAILED != EXIT_NONE_SCORED


def test_aspect_ratio_past_the_processor_limit_is_bad_input_everywhere():
    with pytest.raises(ImageInputError, match="aspect ratio over 200"):
        to_pil(Image.new("RGB", (201, 1)), index=3)
    assert to_pil(Image.new("RGB", (200, 1))).size == (200, 1)
    assert resolution_note(Image.new("RGB", (64, 64))) is None


@pytest.mark.parametrize("model", ["./missing-judge", "missing-judge/", "~/no/such/judge", "a/b/c", "/abs/none"])
def test_a_path_like_model_is_never_tried_on_the_hub(model, capsys):
    args = argparse.Namespace(model=model, backend="transformers", base_url=None, batch_size=1, cache=None,
                              revision=None, device=None, dtype=None, key_fields=None)
    with pytest.raises(CommandError, match="no such checkpoint folder"):
        judge_from_args(args)


def test_a_folder_that_is_no_checkpoint_is_one_line_with_status_2(tmp_path):
    (tmp_path / "imgs").mkdir()
    Image.new("RGB", (64, 64)).save(tmp_path / "imgs" / "a.png")
    (tmp_path / "notamodel").mkdir()
    done = subprocess.run([sys.executable, "-m", "vlmjudge.cli", "terravis", "score", str(tmp_path / "imgs"),
                           "--model", str(tmp_path / "notamodel"), "--out", str(tmp_path / "r.jsonl")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    loading, *error = done.stderr.strip().splitlines()  # the line said while it loads, then the error's one
    assert loading == f"loading judge {tmp_path / 'notamodel'} (transformers) ..." and len(error) == 1, done.stderr
    assert "Traceback" not in done.stderr and "cannot load --model" in error[0]


def test_a_corrupt_cache_file_is_named_with_how_to_recover(tmp_path):
    broken = tmp_path / "responses.sqlite"
    broken.write_text("this is not sqlite")
    with pytest.raises(CacheFileError) as caught:
        ResponseCache(broken)
    assert str(broken) in str(caught.value) and "move it aside" in str(caught.value)


SLOW_COMMAND = textwrap.dedent("""
    import sys, time
    from vlmjudge import cli
    from vlmjudge.cli.exits import RUN

    def slow(args):
        RUN.saved, RUN.out = 7, "records.jsonl"
        open(RUN.out, "w").write("{}\\n" * 7)
        print("started", flush=True)
        time.sleep(60)

    class Parser:
        def parse_args(self, argv):
            return type("Args", (), {"func": staticmethod(slow)})()

    cli.build_parser = Parser
    sys.exit(cli.main([]))
""")


def test_sigterm_prints_one_line_with_what_was_saved(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", SLOW_COMMAND], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path)
    assert proc.stdout.readline().strip() == "started"
    proc.terminate()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.strip().splitlines() == ["interrupted: 7 result(s) finished and saved to records.jsonl; "
                                        "a rerun resumes from the response cache"]


@pytest.mark.parametrize("model_args, expected", [
    ([], "default model (no --model given)"),
    (["--model", "./no-such-judge/"], "no such checkpoint folder"),
])
def test_the_distributed_runner_names_a_model_it_cannot_load_in_one_line(tmp_path, model_args, expected):
    """Offline, the method's Hub default or a mistyped folder is one line with status 2, no traceback."""
    (tmp_path / "imgs").mkdir()
    Image.new("RGB", (64, 64), "red").save(tmp_path / "imgs" / "a.png")
    done = subprocess.run([sys.executable, "-m", "vlmjudge.distributed", "terravis", "--input", str(tmp_path / "imgs"),
                           "--output", str(tmp_path / "out.jsonl"), *model_args], capture_output=True, text=True,
                          timeout=300, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and expected in done.stderr


@pytest.mark.parametrize("argv, batch_size", [([], 512), (["--batch-size", "8"], 8), (["--batch-size", "32"], 32)])
def test_a_server_s_judge_sends_a_stage_together_unless_told(argv, batch_size, monkeypatch):
    """--batch-size's default (8, for an in-process model) does not bind a server's judge, which
    would then keep only 8 requests in flight: it takes the openai backend's own chunk (4 x its
    concurrency); a --batch-size given goes through."""
    pytest.importorskip("openai")
    from vlmjudge.cli.flags import add_judge_flags
    parser = argparse.ArgumentParser()
    add_judge_flags(parser)
    args = parser.parse_args(["--base-url", "http://127.0.0.1:9/v1", "--model", "judge", *argv])
    args.cache = None
    assert judge_from_args(args).batch_size == batch_size
    local = parser.parse_args(["--model", "./missing-judge"])
    assert local.batch_size == 8 and not getattr(local, "batch_size_given", False)
