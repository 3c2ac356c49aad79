"""A benchmark interrupted while judging keeps the judge's answers: the rerun asks only what was
left, and the interrupted run says in one line where the answers are."""
import pytest

import vlmjudge
from vlmjudge.benchmark import judging
from vlmjudge.cli import main

IDS = ["p0", "p1", "p2", "p3", "p4"]


@pytest.fixture
def setup(tmp_path, write_prompts, tiny_vlm_path):
    from PIL import Image

    write_prompts(tmp_path / "p.csv", IDS)
    (tmp_path / "m").mkdir()
    for n, pid in enumerate(IDS):
        Image.new("RGB", (64, 64), (50 * n, 90, 160)).save(tmp_path / "m" / f"{pid}.png")
    return {"prompts": tmp_path / "p.csv", "folder": tmp_path / "m", "judge": tiny_vlm_path("qwen3_vl"),
            "out": tmp_path / "out"}


def test_an_interrupted_judging_resumes_asking_only_what_was_left(setup, board_calls, monkeypatch, capsys):
    real, chunks = judging.judge_chunk, []

    def interrupted_at_the_third_chunk(*args, **kwargs):
        chunks.append(args[2])
        if len(chunks) == 3:
            raise KeyboardInterrupt  # as Ctrl-C or SIGTERM between two chunks
        return real(*args, **kwargs)

    command = ["benchmark", "--prompts", str(setup["prompts"]), "--model-images", f"m={setup['folder']}",
               "--methods", "bench_run_support:JUDGED", "--judge", setup["judge"], "--device", "cpu",
               "--chunk-size", "2", "--out", str(setup["out"])]
    monkeypatch.setattr(judging, "judge_chunk", interrupted_at_the_third_chunk)
    assert main(command) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("interrupted:") and "judge.cache.sqlite" in err[-1], err
    monkeypatch.setattr(judging, "judge_chunk", real)
    result = vlmjudge.benchmark(out=setup["out"], prompts=setup["prompts"], model_images={"m": setup["folder"]},
                                methods="bench_run_support:JUDGED", judge=setup["judge"], device="cpu", chunk_size=2,
                                quiet=True)
    [model] = result.manifest["models"]
    assert (model["resumed_from_cache"], model["model_calls"]) == (4, 1)  # two chunks of two were answered
