"""`bench.side_by_side`: the list is parsed, a backend that cannot run is reported as skipped,
and the table's ratios and the records' comparison say what was measured. No vLLM engine starts:
vllm is hidden from the finder, so this holds in either environment."""
import importlib.util
import io

import pytest

from bench import bench_images
from bench.backends import parse_backends
from bench.decided_checkpoint import build_checkpoint
from bench.side_by_side import Row, backend_table, compare_records, parse_args, run_backends


def test_backend_list_is_ordered_deduplicated_and_checked():
    assert parse_backends(" vllm-serve,transformers ,vllm-serve") == ["vllm-serve", "transformers"]
    with pytest.raises(ValueError, match="tensorrt"):
        parse_backends("transformers,tensorrt")


@pytest.mark.parametrize("argv, message", [
    (["--backends", "transformers,tensorrt"], "tensorrt"),
    (["--backends", " , "], "unknown backend"),
    (["--model", "random:70b"], "random configurations are 32b, 8b, mini"),
    (["--images", "0"], "--images must be >= 1"),
    (["--positive-rate", "1"], "--positive-rate must be in"),
    (["--positive-rate", "nan"], "--positive-rate must be in"),
    (["--ablation-images", "2"], "unrecognized arguments: --ablation-images"),  # the paths benchmark's, not this one's
])
def test_bad_arguments_end_in_one_line_and_exit_2(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_its_own_arguments_default_to_every_backend_and_the_target_rate():
    from bench.terravis_setup import TARGET_RATE
    args = parse_args(["--backends", "vllm,transformers"])
    assert args.backends == ["vllm", "transformers"] and args.positive_rate == TARGET_RATE
    assert parse_args([]).backends == ["transformers", "vllm", "vllm-serve"]


def test_ratios_are_against_the_first_backend():
    rows = [Row("slow", 8.0, 4, 1000, 400, 50), Row("fast", 2.0, 4, 1000, 900, 50)]
    lines = backend_table(rows).splitlines()
    assert "images/s vs slow" in lines[0] and "prefill vs slow" in lines[0]
    slow, fast = (line.split() for line in lines[1:])
    assert slow[-2:] == ["1.00x", "1.00x"]
    assert fast[-2:] == ["4.00x", "0.17x"]  # 4x the images/s; 100 prefill tokens against 600
    assert fast[5:7] == ["900", "0.900"]  # cache hit tokens, hit rate


def test_unavailable_backend_is_skipped_and_the_rest_is_measured(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    images = bench_images(2, 64, seed=3)
    checkpoint, what = build_checkpoint("tiny", images, 0.3, "cpu", "float32")
    out = io.StringIO()
    rows = run_backends(["transformers", "vllm", "vllm-serve"], checkpoint, images, dtype="float32",
                        device="cpu", header=[what], out=out)
    text = out.getvalue()
    assert list(rows) == ["transformers"]
    row = rows["transformers"]
    assert row.images == 2 and row.seconds > 0 and row.prompt_tokens > row.prefill_tokens > 0
    assert "skipped vllm: vllm needs the vllm package" in text
    assert "skipped vllm-serve: vllm-serve needs the vllm package" in text
    assert "eligible 2 of 2" in text  # the eligibility weight set in the checkpoint holds
    # where the time went, measured by hooks: the vision tower, prompts and generated tokens ran
    phases = row.phases.seconds
    assert phases["encode"] > 0 and phases["prefill"] > 0 and phases["decode"] > 0 and phases["queue"] is None
    assert phases["other"] >= 0  # the phases and the rest make up the block timed around the run
    assert sum(v for v in phases.values() if v is not None) == pytest.approx(row.seconds, abs=0.1)
    assert "where the time went" in text and "phases of transformers: measured" in text
    assert "host load of transformers: load average" in text and row.load.cores >= 1
    assert text.rstrip().splitlines()[-1] == "records equal on every backend: yes"  # no target this run can check


def test_bench_terravis_dispatches_on_backends(capsys):
    """`python -m bench.terravis --backends ...` is the side-by-side benchmark, anything else the paths."""
    from bench import terravis
    with pytest.raises(SystemExit) as exit_info:
        terravis.main(["--backends", "transformers,tensorrt"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "python -m bench.terravis: error" in err and "tensorrt" in err
    with pytest.raises(SystemExit) as exit_info:
        terravis.main(["--ablation-images", "-x"])  # the paths benchmark's own flag, parsed by it
    assert "python -m bench.terravis" in capsys.readouterr().err and exit_info.value.code == 2


def test_records_compare_floats_within_the_tolerance():
    from terravis.records import CheckRecord, ImageRecord

    def record(prob):
        return ImageRecord("a", score=0.5, eligible=True, checks=[CheckRecord("optical_effect", detected=True, prob=prob)])

    assert compare_records([record(0.7)], [record(0.70000001)]) == "equal"
    assert compare_records([record(0.7)], [record(0.701)]).startswith("differ on image 0: probs")
    assert compare_records([record(0.7)], []).startswith("differ: 1 records for 0")
