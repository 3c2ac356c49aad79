"""The regeneration loop: selection, aspect queue, run-folder resume, and a tiny diffusers generator."""
from __future__ import annotations

import json
from collections import Counter

import pytest
from regen_helpers import (
    ToyGenerator,
    exact_prompt,
    loop_answers,
    reference_images,
    replay,
)

from regeneration.config import LoopConfig
from regeneration.core import RegenerationLoop
from regeneration.scoring import combine, select
from regeneration.saved_runs import RunFolder
from vlmjudge.generators import DiffusersTextToImage

T, N = 4, 3


def stages(judge) -> Counter:
    return Counter(r.meta["stage"] for _, r in judge.log)


def test_combine_and_select_by_hand():
    w = {"clip": 0.5, "dino": 0.5, "mllm": 0.0}
    assert combine({"clip": 90.0, "dino": 80.0, "mllm": None}, w) == pytest.approx(85.0)
    assert combine({"clip": 90.0, "dino": 80.0, "mllm": 50.0}, {"clip": 1.0, "mllm": 2.0}) == pytest.approx(190.0)
    assert combine({"clip": 90.0, "mllm": None}, {"clip": 1.0, "mllm": 2.0}) is None
    best, combined = select([{"clip": 90, "dino": 70}, {"clip": 80, "dino": 90}, {"clip": 85, "dino": 85}], w)
    assert (best, combined) == (1, [80.0, 85.0, 85.0])  # first of the tie wins
    # MLLM failed for the best CLIP/DINO candidate: it ranks below the judged ones
    best, _ = select([{"clip": 99, "dino": 99, "mllm": None}, {"clip": 10, "dino": 10, "mllm": 25.0}],
                     {"clip": 0.5, "dino": 0.5, "mllm": 1.0})
    assert best == 1
    # all MLLM judgements failed: CLIP/DINO alone decide
    best, combined = select([{"clip": 10, "dino": 10, "mllm": None}, {"clip": 99, "dino": 99, "mllm": None}],
                            {"clip": 0.5, "dino": 0.5, "mllm": 1.0})
    assert best == 1 and combined == [10.0, 99.0]


def test_config_checks():
    assert LoopConfig().aspect(1) == "overall" and LoopConfig().aspect(4) == "detail"
    assert LoopConfig().aspect(5) == "overall"
    assert LoopConfig().seed_for(2, 1) == 4
    assert LoopConfig.make(weights={"mllm": 1}).weight_map == {"clip": 0.0, "dino": 0.0, "mllm": 1.0}
    for bad in ({"rounds": 0}, {"variants": 0}, {"prompt_mode": "magic"}, {"final": "first"}, {"aspects": ()}):
        with pytest.raises(ValueError):
            LoopConfig.make(**bad)
    with pytest.raises(ValueError, match="unknown selection weights"):
        LoopConfig.make(weights={"lpips": 1.0})
    with pytest.raises(ValueError, match="positive sum"):
        LoopConfig.make(weights={"clip": 0.0})


def test_toy_loop_picks_the_exact_copy_every_round(tmp_path, scorer):
    refs = reference_images(3)
    judge = replay(loop_answers(refs, T, N, exact_at=lambda item, t: (t + int(item[-1])) % N))
    generator = ToyGenerator(refs)
    loop = RegenerationLoop(judge, generator, scorer, str(tmp_path / "run"))
    results = loop.run(refs)
    for r in results:
        assert r.status == "scored" and r.round == T and r.parse_failures == 0
        assert [p["index"] for p in r.rounds] == [(t + int(r.id[-1])) % N for t in range(1, T + 1)]
        assert [p["aspect"] for p in r.rounds] == ["overall", "style", "color", "detail"]
        assert r.clip == pytest.approx(100.0, abs=1e-6) and r.dino == pytest.approx(100.0, abs=1e-6)
        assert r.prompt == exact_prompt(r.id, T)
        assert r.mllm["content_norm"] == 1.0 and r.mllm["perceptual_norm"] == 0.75  # (5-1)/4, (4-1)/4
        assert RunFolder.load_image(loop.folder.root / r.image).tobytes() == refs[r.id].tobytes()
    candidates = loop.folder.events("candidate")
    assert len(candidates) == len(refs) * T * N
    assert Counter((c["item"], c["round"]) for c in candidates) == {(i, t): N for i in refs for t in range(1, T + 1)}
    assert all(c["selected"] == c["prompt"].startswith("EXACT") for c in candidates)
    # selection used CLIP/DINO only: no MLLM request inside the rounds, ratings only for the final images
    assert stages(judge) == {"iut_caption": 3, "iut_objects": 3, "iut_attributes": 6, "iut_relations": 3,
                             "initial_prompt": 3, "variants": 3, "revision": 9, "feedback": 9, "content": 3,
                             "perceptual": 3}
    assert all(r.meta["round"] == T + 1 for _, r in judge.log if r.meta["stage"] in ("content", "perceptual"))
    assert len(generator.calls) == len(refs) * T * N
    # round t > 1 revises the previous best prompt along round t's aspect, with the feedback
    revision = next(r for _, r in judge.log if r.meta["stage"] == "revision" and r.meta["round"] == 3)
    assert exact_prompt(revision.meta["item"], 2) in revision.text and "make the sofa lighter" in revision.text
    assert loop.pack.aspect("color") in revision.text
    feedback = next(r for _, r in judge.log if r.meta["stage"] == "feedback" and r.meta["round"] == 1)
    assert len(feedback.images) == 2 and loop.pack.aspect("style") in feedback.text
    seeds = json.loads((loop.folder.round_dir("ref0", 2) / "prompts.json").read_text())["seeds"]
    assert seeds == [3, 4, 5]


def test_rerun_after_kill_regenerates_nothing_saved(tmp_path, scorer):
    refs = reference_images(2)
    answers = loop_answers(refs, T, N)
    killed = ToyGenerator(refs, fail_after=10)
    config = LoopConfig(generator_batch=1)
    with pytest.raises(KeyboardInterrupt):
        RegenerationLoop(replay(answers), killed, scorer, str(tmp_path / "run"), config=config).run(refs)
    saved = sorted((tmp_path / "run").rglob("cand_*.png"))
    assert len(saved) == 10
    before = {p: p.read_bytes() for p in saved}
    judge = replay(answers)
    again = ToyGenerator(refs)
    loop = RegenerationLoop(judge, again, scorer, str(tmp_path / "run"), config=config)
    results = loop.run(refs)
    assert len(again.calls) == len(refs) * T * N - 10
    assert all(p.read_bytes() == data for p, data in before.items())
    assert all(r.status == "scored" and r.clip == pytest.approx(100.0, abs=1e-6) for r in results)
    assert "iut_caption" not in stages(judge)  # understanding was saved too
    assert len(loop.folder.events("candidate")) == len(refs) * T * N
    # a third run does nothing at all
    idle_judge, idle = replay({}), ToyGenerator(refs)
    assert [r.to_json() for r in RegenerationLoop(idle_judge, idle, scorer, str(tmp_path / "run"),
                                                  config=config).run(refs)] == [r.to_json() for r in results]
    assert idle.calls == [] and idle_judge.log == []


def test_resume_refuses_changed_settings(tmp_path, scorer):
    refs = reference_images(1)
    RegenerationLoop(replay(loop_answers(refs, 1, N)), ToyGenerator(refs), scorer, str(tmp_path / "run"),
                     config=LoopConfig(rounds=1)).run(refs)
    with pytest.raises(ValueError, match="variants"):
        RegenerationLoop(replay({}), ToyGenerator(refs), scorer, str(tmp_path / "run"),
                         config=LoopConfig(rounds=1, variants=2)).run(refs)


def test_mllm_weight_drives_selection(tmp_path, scorer):
    refs = reference_images(1)
    answers = loop_answers(refs, 2, N, exact_at=lambda item, t: 0, final=False)
    for t in (1, 2):  # the judge prefers candidate 2, not the exact copy at 0
        for k in range(N):
            answers[("content", "ref0", t, k)] = json.dumps({"reason": "r", "score": 5 if k == 2 else 2})
    judge = replay(answers)
    config = LoopConfig.make(rounds=2, weights={"mllm": 1.0}, final_mllm=False)
    (result,) = RegenerationLoop(judge, ToyGenerator(refs), scorer, str(tmp_path / "run"), config=config).run(refs)
    assert [p["index"] for p in result.rounds] == [2, 2]
    assert result.rounds[0]["mllm"] == pytest.approx(100.0) and result.combined == pytest.approx(100.0)
    assert result.mllm is None and stages(judge)["content"] == 2 * N and "perceptual" not in stages(judge)


def test_unreadable_variants_are_counted_and_the_loop_goes_on(tmp_path, scorer):
    refs = reference_images(1)
    answers = loop_answers(refs, 2, N, final=False)
    answers[("variants", "ref0", 1, 0)] = "three prompts: a, b, c"
    config = LoopConfig(rounds=2, final_mllm=False)
    loop = RegenerationLoop(replay(answers), ToyGenerator(refs), scorer, str(tmp_path / "run"), config=config)
    (result,) = loop.run(refs)
    spec = json.loads((loop.folder.round_dir("ref0", 1) / "prompts.json").read_text())
    assert spec["source"] == "repeat_base" and len(set(spec["prompts"])) == 1 and spec["seeds"] == [0, 1, 2]
    assert result.status == "scored" and result.parse_failures == 1


def test_failed_understanding_marks_the_item_failed(tmp_path, scorer):
    refs = reference_images(2)
    answers = loop_answers(refs, 1, N)
    answers[("iut_caption", "ref1", 0, 0)] = None  # backend error
    config = LoopConfig(rounds=1)
    results = RegenerationLoop(replay(answers), ToyGenerator(refs), scorer, str(tmp_path / "run"),
                               config=config).run(refs)
    assert results[0].status == "scored"
    assert results[1].status == "failed" and results[1].clip is None and results[1].parse_failures == 1


def test_user_pack_reaches_the_judge(tmp_path, scorer):
    refs = reference_images(1)
    pack = {"variants": "Reword {prompt} {n} times; mind {aspect}; max {max_words} words.", "limits": {"max_words": 9}}
    judge = replay(loop_answers(refs, 1, N))
    loop = RegenerationLoop(judge, ToyGenerator(refs), scorer, str(tmp_path / "run"), config=LoopConfig(rounds=1),
                            pack=pack)
    loop.run(refs)
    asked = next(r for _, r in judge.log if r.meta["stage"] == "variants")
    assert asked.text.startswith("Reword an orange cat") and asked.text.endswith("max 9 words.")
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["pack"]["version"].startswith("default-v1+") and saved["pack"]["version"] != "default-v1+custom"


class KillableDiffusers:
    """The adapter under test, wrapped to simulate a kill after a number of images and to count."""

    def __init__(self, adapter: DiffusersTextToImage, fail_after: int | None = None) -> None:
        self.adapter, self.fail_after, self.prompts = adapter, fail_after, []
        self.name = adapter.name

    def __call__(self, prompts, seeds):
        if self.fail_after is not None and len(self.prompts) + len(prompts) > self.fail_after:
            raise KeyboardInterrupt("simulated kill")
        self.prompts += list(prompts)
        return self.adapter(prompts, seeds)


def test_tiny_diffusers_loop_resumes(tmp_path, scorer):
    from vlmjudge.testing.tiny_diffusers import build_tiny_text_to_image

    adapter = DiffusersTextToImage.from_pretrained(build_tiny_text_to_image(tmp_path / "sd"), device="cpu",
                                                   num_inference_steps=2, guidance_scale=1.0)
    refs = reference_images(2)
    answers = loop_answers(refs, 2, N)
    config = LoopConfig(rounds=2, generator_batch=2)
    with pytest.raises(KeyboardInterrupt):
        RegenerationLoop(replay(answers), KillableDiffusers(adapter, fail_after=8), scorer, str(tmp_path / "run"),
                         config=config).run(refs)
    saved = {p: p.read_bytes() for p in (tmp_path / "run").rglob("cand_*.png")}
    assert len(saved) == 8
    counting = KillableDiffusers(adapter)
    loop = RegenerationLoop(replay(answers), counting, scorer, str(tmp_path / "run"), config=config)
    results = loop.run(refs)
    assert len(counting.prompts) == len(refs) * 2 * N - 8
    assert all(p.read_bytes() == data for p, data in saved.items())
    assert all(r.status == "scored" and -100 <= r.clip <= 100 and -100 <= r.dino <= 100 for r in results)
    assert len(loop.folder.events("candidate")) == len(refs) * 2 * N
    best = results[0].rounds[0]
    cand = RunFolder.read_json(loop.folder.round_dir("ref0", 1) / "scores.json")["candidates"]
    assert best["combined"] == max(c["combined"] for c in cand)
    assert best["combined"] == pytest.approx(0.5 * best["clip"] + 0.5 * best["dino"])
