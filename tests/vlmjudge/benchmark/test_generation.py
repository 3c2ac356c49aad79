"""Generators under test (the tiny diffusers pipeline, 4 prompts, 2 models): the layout and the
generator's manifest, images seeded per (seed, prompt id, k), several images per prompt, a run
interrupted midway that resumes regenerating nothing it finished, and a folder made with other
settings refused."""
import json

import numpy as np
import pytest
from PIL import Image

import vlmjudge
from vlmjudge.benchmark.models import derive_seed
from vlmjudge.cli import main

IDS = ["cat", "bus", "tree", "cup"]
SETTINGS = {"seed": 5, "steps": 2, "size": 32}


@pytest.fixture
def setup(tmp_path, write_prompts, tiny_pipeline, tiny_vlm_path):
    return {"prompts": write_prompts(tmp_path / "p.csv", IDS), "pipeline": tiny_pipeline,
            "judge": tiny_vlm_path("qwen3_vl"), "out": tmp_path / "out"}


def run(setup, **extra):
    """The Python face: two generators over one pipeline, the toy method on the tiny judge."""
    keywords = {"out": setup["out"], "prompts": setup["prompts"], "methods": "bench_run_support:JUDGED",
                "generators": {"one": setup["pipeline"], "two": setup["pipeline"]}, "judge": setup["judge"],
                "device": "cpu", "generator_device": "cpu", "quiet": True, **SETTINGS, **extra}
    return vlmjudge.benchmark(**keywords)


def test_generated_images_the_layout_and_the_generators_manifest(setup, board_calls):
    result = run(setup)
    assert result.status == 0
    out = setup["out"]
    for model in ("one", "two"):
        assert sorted(p.name for p in (out / "images" / model).iterdir()) == sorted(
            [f"{i}.png" for i in IDS] + ["generator.json"])
        made = json.loads((out / "images" / model / "generator.json").read_text())
        assert (made["seed"], made["steps"], made["width"], made["height"], made["images_per_prompt"]) == (5, 2, 32, 32, 1)
        assert made["pipeline"] == setup["pipeline"] and "sha256" in made["seed_rule"] and made["diffusers_version"]
        assert made["call_kwargs"] == {"num_inference_steps": 2, "height": 32, "width": 32}
        records = [json.loads(line) for line in (out / "runs" / model / "toyjudged" / "records.jsonl").open()]
        assert [r["id"] for r in records] == IDS
    entry = result.manifest["models"][0]
    assert entry["kind"] == "generator" and entry["generation"] == {"generated": 4, "kept": 0}
    assert entry["folder"] == str((out / "images" / "one").resolve())


def test_each_image_is_made_from_the_seed_of_its_prompt_id(setup, board_calls):
    run(setup)
    from vlmjudge.generators import load_generator

    generator = load_generator(setup["pipeline"], device="cpu", num_inference_steps=2, height=32, width=32)
    again = generator([f"a photo of thing number {n}" for n in range(4)], [derive_seed(5, i, 0) for i in IDS])
    for pid, image in zip(IDS, again):
        written = np.asarray(Image.open(setup["out"] / "images" / "one" / f"{pid}.png"))
        assert np.array_equal(written, np.asarray(image))


def test_a_killed_generation_resumes_without_regenerating_a_finished_image(setup, board_calls):
    written = []

    def stop_after_three(path):
        written.append(path)
        if len(written) == 3:
            raise KeyboardInterrupt  # as Ctrl-C or SIGTERM midway through the first model's batch

    with pytest.raises(KeyboardInterrupt):
        run(setup, on_image=stop_after_three)
    folder = setup["out"] / "images" / "one"
    assert sorted(p.name for p in folder.glob("*.png")) == sorted(p.name for p in written)
    assert not list(folder.glob(".*partial"))  # no half-written image left behind
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in written}
    resumed = run(setup)
    assert [m["generation"] for m in resumed.manifest["models"]] == [{"generated": 1, "kept": 3},
                                                                     {"generated": 4, "kept": 0}]
    assert {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in written} == before  # untouched
    again = run(setup)
    assert [m["generation"] for m in again.manifest["models"]] == [{"generated": 0, "kept": 4}] * 2


def test_several_images_per_prompt(setup, board_calls):
    result = run(setup, images_per_prompt=2, generators={"one": setup["pipeline"]})
    folder = setup["out"] / "images" / "one"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.png")) == sorted(
        f"{i}/{k}.png" for i in IDS for k in (0, 1))
    records = [json.loads(line) for line in (setup["out"] / "runs" / "one" / "toyjudged" / "records.jsonl").open()]
    assert [r["id"] for r in records] == [f"{i}/{k}" for i in IDS for k in (0, 1)]
    first, second = (np.asarray(Image.open(folder / "cat" / f"{k}.png")) for k in (0, 1))
    assert not np.array_equal(first, second)  # each image its own seed
    assert result.manifest["models"][0]["layout"] == "several"


def test_a_folder_made_with_other_settings_is_refused(setup, board_calls, capsys):
    run(setup)
    capsys.readouterr()
    status = main(["benchmark", "--prompts", str(setup["prompts"]), "--generator", f"one={setup['pipeline']}",
                   "--methods", "bench_run_support:JUDGED", "--judge", setup["judge"], "--device", "cpu", "--seed", "6",
                   "--steps", "2", "--size", "32", "--out", str(setup["out"])])
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and "holds images made with other settings (seed 5 then, 6 now)" in err
