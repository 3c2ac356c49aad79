"""metrics/fager scores images as they are added (the judge runs in add_batch), so in evaluate's
multi-process mode each process scores its own shard and process 0 only aggregates."""
from __future__ import annotations

from pathlib import Path

import pytest

from fagent_helpers import keyed_replay, noise
from ranks import run_ranks

evaluate = pytest.importorskip("evaluate")
METRIC_DIR = Path(__file__).resolve().parents[2] / "metrics" / "fager"
SHARDS = {0: slice(0, 2), 1: slice(2, 5)}


def asked_items(judge) -> set[str]:
    return {str(request.meta["item_id"]) for _, request in judge.log}


def test_images_are_scored_on_add_and_two_processes_equal_one(abo_five, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    images = [noise(i) for i in range(5)]
    columns = {"images": images, "prompts": abo_five["prompts"], "qa_sets": [q.model_dump_json() for q in abo_five["qa"]],
               "ids": abo_five["ids"]}

    judge = keyed_replay(abo_five["answers"])
    single = evaluate.load(str(METRIC_DIR), judge=judge, cache_dir=str(tmp_path / "single"))
    single.add_batch(**{k: v[:2] for k, v in columns.items()})
    assert asked_items(judge) == set(abo_five["ids"][:2])  # scored on add
    single.add_batch(**{k: v[2:] for k, v in columns.items()})
    asked = len(judge.log)
    expected = single.compute()
    assert len(judge.log) == asked  # compute asks the judge nothing
    assert expected["scores"] == abo_five["scores"]
    assert expected["fager"] == pytest.approx(sum(abo_five["scores"]) / 5)
    assert expected["decisions"] == [r["next_step"]["decision"] for r in abo_five["records"]]
    assert expected["n_scored"] == 5 and expected["parse_failures"] == 0

    judges = {rank: keyed_replay(abo_five["answers"]) for rank in SHARDS}
    modules = {rank: evaluate.load(str(METRIC_DIR), judge=judges[rank], num_process=2, process_id=rank,
                                   experiment_id="fager-mp", cache_dir=str(tmp_path / "shared"), timeout=60)
               for rank in SHARDS}

    def step(rank):
        modules[rank].add_batch(**{k: v[SHARDS[rank]] for k, v in columns.items()})
        return modules[rank].compute()

    results = run_ranks(SHARDS, step)
    assert results[1] is None  # only process 0 aggregates
    assert results[0] == expected
    for rank, shard in SHARDS.items():  # each process asked only about its own shard
        assert asked_items(judges[rank]) == set(abo_five["ids"][shard])
    assert len(judges[0].log) + len(judges[1].log) == asked


def test_inputs_and_options_are_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    module = evaluate.load(str(METRIC_DIR), judge=keyed_replay({}), cache_dir=str(tmp_path / "data"))
    with pytest.raises(ValueError, match="no images to aggregate"):
        module.compute()
    with pytest.raises(ValueError, match="load time"):
        module.compute(judge=keyed_replay({}))
    with pytest.raises(ValueError, match="1 prompts for 2 images"):
        module.add_batch(images=[noise(1), noise(2)], prompts=["a"])
    with pytest.raises(TypeError, match="list of images"):
        module.add_batch(images=noise(1), prompts=["a"])
    with pytest.raises(ValueError, match="unknown compute arguments"):
        module.compute(images=[noise(1)], prompts=["a"], colour="red")
