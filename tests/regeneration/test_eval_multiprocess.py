"""metrics/regeneration scores pairs as they are added (encoders and judge run in add_batch), so in
evaluate's multi-process mode each process scores its own shard and process 0 only aggregates."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from regeneration.asking import META_KEYS

from nested_close import assert_nested_close
from ranks import run_ranks

evaluate = pytest.importorskip("evaluate")
METRICS_DIR = Path(__file__).resolve().parents[2] / "metrics" / "regeneration"


def noise(n: int, seed: int) -> list[Image.Image]:
    rng = np.random.RandomState(seed)
    return [Image.fromarray(rng.randint(0, 256, size=(32, 32, 3), dtype=np.uint8)) for _ in range(n)]


def write_answers(path, items_scores: dict) -> str:
    """Replay answers: content and perceptual ratings per item ("unreadable" for None)."""
    rows = []
    for item, (content, perceptual) in items_scores.items():
        for stage, score in (("content", content), ("perceptual", perceptual)):
            text = "unreadable" if score is None else json.dumps({"reason": "r", "score": score})
            rows.append({"meta": dict(zip(META_KEYS, (stage, item, 0, 0))), "text": text})
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return str(path)


class CountingScorer:
    """Wraps the module's similarity scorer to count the pairs it embedded."""

    def __init__(self, inner):
        self.inner, self.pairs = inner, 0

    def score(self, references, generated):
        self.pairs += len(generated)
        return self.inner.score(references, generated)

    def manifest(self):
        return self.inner.manifest()


def load(encoder_dirs, cache_dir, **kwargs):
    module = evaluate.load(str(METRICS_DIR), clip_model=encoder_dirs["clip"], dino_model=encoder_dirs["dino"],
                           device="cpu", cache_dir=str(cache_dir), **kwargs)
    pairs = module.scorer()  # the spec's own scorer (it keys the ratings by the pairs' ids)
    pairs.similarity = CountingScorer(pairs.similarity)
    return module


def embedded(module) -> int:
    """How many pairs the module's encoders embedded."""
    return module.scorer().similarity.pairs


def replay(answers):
    from vlmjudge import load_judge

    return load_judge(answers, backend="replay", key_fields=META_KEYS)


def test_pairs_are_scored_on_add_and_two_processes_equal_one(encoder_dirs, scorer, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    refs, gens = noise(5, 1), noise(5, 2)
    shards = {0: slice(0, 2), 1: slice(2, 5)}
    # One process: pairs are items "0".."4"; two processes: "<rank>:<n>" (the same ratings, re-keyed).
    ratings = {0: (5, 3), 1: (2, None), 2: (4, 4), 3: (1, 2), 4: (3, 5)}
    single_answers = write_answers(tmp_path / "single.jsonl", {str(k): v for k, v in ratings.items()})
    split = {f"{rank}:{k}": ratings[shard.start + k]
             for rank, shard in shards.items() for k in range(shard.stop - shard.start)}
    shard_answers = write_answers(tmp_path / "shards.jsonl", split)

    single_judge = replay(single_answers)
    single = load(encoder_dirs, tmp_path / "single", judge=single_judge)
    single.add_batch(images=gens[:2], reference_images=refs[:2])
    single.add_batch(images=gens[2:], reference_images=refs[2:])
    calls = single_judge.stats.model_calls
    assert calls == 10 and embedded(single) == 5  # scored on add: content and perceptual of 5 pairs
    expected = single.compute(per_pair=True)
    assert single_judge.stats.model_calls == calls and embedded(single) == 5  # compute only aggregates
    sims = scorer.score(refs, gens)
    assert expected["clip_per_pair"] == pytest.approx([s["clip"] for s in sims], abs=1e-5)
    assert expected["dino"] == pytest.approx(sum(s["dino"] for s in sims) / 5, abs=1e-5)
    assert expected["content_per_pair"] == [5, 2, 4, 1, 3]
    assert expected["perceptual_per_pair"] == [3, None, 4, 2, 5]
    assert expected["mllm_content"] == pytest.approx(sum((s - 1) / 4 for s in (5, 2, 4, 1, 3)) / 5)
    assert expected["mllm_perceptual"] == pytest.approx(sum((s - 1) / 4 for s in (3, 4, 2, 5)) / 4)
    assert expected["mllm_parse_failures"] == 1

    judges = {rank: replay(shard_answers) for rank in shards}
    modules = {rank: load(encoder_dirs, tmp_path / "shared", judge=judges[rank], num_process=2, process_id=rank,
                          experiment_id="regen-mp", timeout=60) for rank in shards}

    def step(rank):
        modules[rank].add_batch(images=gens[shards[rank]], reference_images=refs[shards[rank]])
        return modules[rank].compute(per_pair=True)

    results = run_ranks(shards, step)
    assert results[1] is None  # only process 0 aggregates
    assert_nested_close(results[0], expected, abs_tol=1e-5)
    for rank, shard in shards.items():  # each process scored only its own shard
        n = shard.stop - shard.start
        assert embedded(modules[rank]) == n and judges[rank].stats.model_calls == 2 * n


def test_bad_inputs_fail_clearly(encoder_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    module = load(encoder_dirs, tmp_path / "data")
    with pytest.raises(ValueError, match="no images to aggregate"):
        module.compute()
    with pytest.raises(ValueError, match="2 reference images for 1 images"):
        module.add_batch(images=noise(1, 3), reference_images=noise(2, 4))
    with pytest.raises(TypeError, match="list of images"):
        module.add_batch(images=noise(1, 3)[0], reference_images=noise(1, 4))
    with pytest.raises(ValueError, match="load time"):
        module.compute(model="x")
    with pytest.raises(ValueError, match="either judge"):
        load(encoder_dirs, tmp_path / "data", judge=object(), model="x")
