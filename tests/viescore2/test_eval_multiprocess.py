"""metrics/viescore2 (config `default`) judges images as they are added, so in evaluate's
multi-process mode each process judges its own shard and process 0 only aggregates."""
import json
from pathlib import Path

import pytest
from PIL import Image

from ranks import run_ranks

FOLDER = Path(__file__).resolve().parents[2] / "metrics" / "viescore2"
evaluate = pytest.importorskip("evaluate")

# Scripted judge outputs (fields pq_sc+split), keyed by prompt; overall = sqrt(pq * sc).
OUTPUTS = {
    "a": "pq: 8/10\nsc: 2/10\nartifact:\nr2: 3,4!\nmisalign:\nnone",
    "b": "pq: 4/10\nsc: 9/10\nartifact:\nnone\nmisalign:\nr1: 1\nr2: 1,2",
    "c": "pq: 9/10\nsc: 9/10\nartifact:\nnone\nmisalign:\nr8: 8",
    "d": "I cannot judge this image.",
    "e": "pq: 1/10\nsc: 4/10\nartifact:\nnone\nmisalign:\nnone",
}
PROMPTS = list(OUTPUTS)
SHARDS = {0: slice(0, 2), 1: slice(2, 5)}


def load(answers, cache_dir, **kwargs):
    return evaluate.load(str(FOLDER), "default", model=str(answers), backend="replay",
                         judge_kwargs={"key_fields": ("prompt",)}, cache_dir=str(cache_dir), **kwargs)


def calls(module):
    return module.scorer().judge.stats.model_calls


def without_ids(out):
    return {**out, "records": [{k: v for k, v in r.items() if k != "id"} for r in out["records"]]}


def test_images_are_judged_on_add_and_two_processes_equal_one(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"meta": {"prompt": p}, "text": t}) + "\n" for p, t in OUTPUTS.items()))
    images = [Image.new("RGB", (16, 16), (40 * i, 10, 10)) for i in range(5)]

    single = load(answers, tmp_path / "single")
    single.add_batch(images=images[:2], prompts=PROMPTS[:2])
    assert calls(single) == 2  # judged on add
    single.add(image=images[2], prompt=PROMPTS[2], conditioning=[images[0]])
    single.add_batch(images=images[3:], prompts=PROMPTS[3:])
    assert calls(single) == 5
    expected = single.compute()
    assert calls(single) == 5  # compute asks the judge nothing
    assert expected["scores"] == pytest.approx([4.0, 6.0, 9.0, None, 2.0])
    assert expected["viescore2"] == pytest.approx(21 / 4) and expected["n_scored"] == 4
    assert expected["parse_failures"] == 3 and expected["status_counts"] == {"scored": 4, "failed": 1}
    assert [r["id"] for r in expected["records"]] == ["0", "1", "2", "3", "4"]
    assert [r["num_conditioning"] for r in expected["records"]] == [0, 0, 1, 0, 0]
    assert [r["text"] for r in expected["records"]] == list(OUTPUTS.values())

    modules = {rank: load(answers, tmp_path / "shared", num_process=2, process_id=rank, experiment_id="vs2-mp",
                          timeout=60) for rank in SHARDS}

    def step(rank):
        shard = SHARDS[rank]
        cond = [[images[0]] if p == "c" else [] for p in PROMPTS[shard]]
        modules[rank].add_batch(images=images[shard], prompts=PROMPTS[shard], conditioning=cond)
        return modules[rank].compute()

    results = run_ranks(SHARDS, step)
    assert results[1] is None  # only process 0 aggregates
    assert [r["id"] for r in results[0]["records"]] == ["0:0", "0:1", "1:0", "1:1", "1:2"]
    assert without_ids(results[0]) == without_ids(expected)  # the same replayed answers, read alike
    assert calls(modules[0]) == 2 and calls(modules[1]) == 3  # each judged only its own shard


def test_judge_mode_inputs_are_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    (tmp_path / "none.jsonl").write_text("")
    module = load(tmp_path / "none.jsonl", tmp_path / "data")
    with pytest.raises(ValueError, match="no images"):
        module.compute()
    with pytest.raises(ValueError, match="not predictions"):
        module.add_batch(predictions=["x"], references=["y"])
    with pytest.raises(ValueError, match="2 prompts for 1 images"):
        module.add_batch(images=[Image.new("RGB", (8, 8))], prompts=["a", "b"])
    with pytest.raises(ValueError, match="needs images"):
        module.add_batch(images=[Image.new("RGB", (8, 8))])
