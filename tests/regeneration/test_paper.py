"""The paper's baselines and selection (issue 24 items 1-3), on hand-made inputs whose outcome follows
from the paper (Image Regeneration, Image Understanding / Iterative Generation / Ablation Study)."""
from __future__ import annotations

import argparse
import json
from collections import Counter

import pytest
from regen_helpers import ToyGenerator, caption_json, loop_answers, reference_images, replay

from regeneration.cli import _config, configure
from regeneration.scoring import SELECTION_PRESETS, select
from regeneration.config import LoopConfig
from regeneration.core import RegenerationLoop
from regeneration.saved_runs import RunFolder


def _stages(judge) -> Counter:
    return Counter(r.meta["stage"] for _, r in judge.log)


def _texts(judge, stage: str) -> list[str]:
    return [r.text for _, r in judge.log if r.meta["stage"] == stage]


def test_interrogator_baseline_is_single_shot_with_its_prompt_as_written(tmp_path, scorer):
    """Paper, "Image Understanding" and "Baseline for image understanding" (Figure 3): the
    CLIP-interrogator's prompt goes straight to the T2I model, which makes one image, compared with
    the reference. With a caption that the toy generator paints as the reference itself, the prompt
    used as written gives the reference pixel for pixel: CLIP 100 % and DINO 100 %, after exactly one
    generation per reference, seed 0, and no rewording, feedback or revision request."""
    refs = reference_images(2)
    answers = {("caption", item, 0, 0): json.dumps({"caption": f"EXACT {item} painted."}) for item in refs}
    for item in refs:  # the final ratings are asked after the one round
        answers[("content", item, 2, 0)] = json.dumps({"reason": "same", "score": 5})
        answers[("perceptual", item, 2, 0)] = json.dumps({"reason": "fine", "score": 4})
    judge, generator = replay(answers), ToyGenerator(refs)
    loop = RegenerationLoop(judge, generator, scorer, str(tmp_path / "ci"), config=LoopConfig(prompt_mode="interrogator"))
    results = loop.run(refs)
    assert _stages(judge) == {"caption": 2, "content": 2, "perceptual": 2}
    for r in results:
        written = RunFolder.read_json(tmp_path / "ci" / "items" / r.id / "initial_interrogator.json")["prompt"]
        assert written.startswith(f"EXACT {r.id} painted, ")  # caption (period dropped) + CLIP modifiers
        assert r.status == "scored" and r.prompt == written and (r.round, r.index) == (1, 0) and len(r.rounds) == 1
        assert r.clip == pytest.approx(100.0, abs=1e-6) and r.dino == pytest.approx(100.0, abs=1e-6)
    assert [(p.split()[1], seed) for p, seed in generator.calls] == [("ref0", 0), ("ref1", 0)]
    assert [p for p, _ in generator.calls] == [r.prompt for r in results]
    # the iterated variant stays available by name: round 1 then rewords the interrogator prompt
    iterated = LoopConfig(prompt_mode="interrogator", interrogator="loop")
    assert iterated.effective_rounds == 4 and LoopConfig(prompt_mode="interrogator").effective_rounds == 1
    with pytest.raises(ValueError, match="interrogator"):
        LoopConfig(interrogator="twice")


def test_selection_presets_release_default_and_paper_by_hand():
    """Paper, "Iterative Generation", image selection: "CLIP, DINOv2, GPT4v is used to assess the
    similarity between N_t images and the reference image, selecting the highest scoring". The
    release weighs 0.5 CLIP + 0.5 DINOv2 and no MLLM (the default); the paper preset weighs all three
    equally (its weights are not given). Candidate A: CLIP 90, DINO 90, MLLM content 3/5 -> 50;
    B: 88, 88, 5/5 -> 100. Release: A = 90 > B = 88. Paper: A = 230/3 = 76.67 < B = 276/3 = 92."""
    a, b = {"clip": 90.0, "dino": 90.0, "mllm": 50.0}, {"clip": 88.0, "dino": 88.0, "mllm": 100.0}
    assert LoopConfig().weight_map == SELECTION_PRESETS["release"] == {"clip": 0.5, "dino": 0.5, "mllm": 0.0}
    assert select([a, b], LoopConfig().weight_map) == (0, [90.0, 88.0])
    assert select([a, b]) == (0, [90.0, 88.0])  # the default preset without weights
    paper = LoopConfig.make(selection="paper").weight_map
    assert paper == {"clip": 1 / 3, "dino": 1 / 3, "mllm": 1 / 3}
    best, combined = select([a, b], paper)
    assert best == 1 and combined == pytest.approx([230 / 3, 92.0])
    with pytest.raises(ValueError, match="not both"):
        LoopConfig.make(weights={"clip": 1.0}, selection="paper")
    with pytest.raises(ValueError, match="selection must be one of"):
        LoopConfig.make(selection="gpt4v")
    with pytest.raises(ValueError, match="without candidates"):
        select([], paper)


def _cli_config(*flags: str) -> LoopConfig:
    parser = argparse.ArgumentParser()
    configure(parser)
    return _config(parser.parse_args(["run", "--references", "r", "--generator", "g", "--out", "o", *flags]))


def test_cli_selection_preset():
    """`--selection paper` gives the paper's thirds; no flag gives the release's halves; explicit
    `--weights` still works, and both together are refused."""
    assert _cli_config().weight_map == {"clip": 0.5, "dino": 0.5, "mllm": 0.0}
    assert _cli_config("--selection", "paper").weight_map == {"clip": 1 / 3, "dino": 1 / 3, "mllm": 1 / 3}
    assert _cli_config("--weights", "clip=1").weight_map == {"clip": 1.0, "dino": 0.0, "mllm": 0.0}
    assert _cli_config("--prompt-mode", "interrogator").single_shot
    assert not _cli_config("--prompt-mode", "interrogator", "--interrogator", "loop").single_shot
    with pytest.raises(ValueError, match="not both"):
        _cli_config("--selection", "paper", "--weights", "clip=1")


def test_paper_selection_asks_the_mllm_for_every_candidate(tmp_path, scorer):
    """Under the paper preset every candidate of every round gets an MLLM content rating, and the
    recorded combined score is the equal-weight mean of CLIP %, DINO % and the rating on 0-100
    ((s - 1) / 4 x 100): here ratings 1 and 5 give MLLM 0 and 100."""
    refs = reference_images(1)
    answers = loop_answers(refs, 1, 2, exact_at=lambda item, t: 0)
    answers[("content", "ref0", 1, 0)] = json.dumps({"reason": "far", "score": 1})
    answers[("content", "ref0", 1, 1)] = json.dumps({"reason": "close", "score": 5})
    judge = replay(answers)
    config = LoopConfig.make(selection="paper", rounds=1, variants=2)
    loop = RegenerationLoop(judge, ToyGenerator(refs), scorer, str(tmp_path / "paper"), config=config)
    (result,) = loop.run(refs)
    scores = RunFolder.read_json(tmp_path / "paper" / "items" / "ref0" / "round_1" / "scores.json")
    assert [c["mllm"] for c in scores["candidates"]] == [0.0, 100.0]
    for c in scores["candidates"]:
        assert c["combined"] == pytest.approx((c["clip"] + c["dino"] + c["mllm"]) / 3)
    assert scores["best"] == max(range(2), key=lambda k: (scores["candidates"][k]["combined"], -k))
    assert sum(1 for _, r in judge.log if r.meta["stage"] == "content" and r.meta["round"] == 1) == 2


def test_direct_changes_only_the_initial_prompt(tmp_path, scorer):
    """Paper, "Impact of IUT" (Table 3): "Direct" generates the initial prompt directly from the
    reference image; "IUT" from the tree. Everything after the initial prompt is the same loop:
    feedback and revision see the IUT in both. With the same answers and the same winning prompt,
    the two modes' feedback and revision requests are identical, word for word, and carry the tree."""
    refs = reference_images(1)
    answers = loop_answers(refs, 2, 2, exact_at=lambda item, t: 0)
    answers[("direct_prompt", "ref0", 0, 0)] = json.dumps({"prompt": "direct words"})
    texts = {}
    for mode in ("iut", "direct"):
        judge = replay(answers)
        config = LoopConfig(rounds=2, variants=2, prompt_mode=mode)
        (result,) = RegenerationLoop(judge, ToyGenerator(refs), scorer, str(tmp_path / mode), config=config).run(refs)
        assert result.status == "scored" and result.parse_failures == 0
        texts[mode] = {stage: _texts(judge, stage) for stage in ("variants", "feedback", "revision")}
        stages = _stages(judge)
        assert stages["iut_caption"] == 1 and stages["feedback"] == 1 and stages["revision"] == 1
        assert stages["initial_prompt"] == (mode == "iut") and stages["direct_prompt"] == (mode == "direct")
    iut_text = json.loads(caption_json("ref0"))["description"]  # a part of the tree's text
    for stage in ("feedback", "revision"):
        assert texts["direct"][stage] == texts["iut"][stage]
        assert iut_text in texts["direct"][stage][0] and "(not available)" not in texts["direct"][stage][0]
    assert "direct words" in texts["direct"]["variants"][0]
    assert "direct words" not in texts["iut"]["variants"][0]
