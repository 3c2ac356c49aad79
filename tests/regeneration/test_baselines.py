"""Baselines: Direct MLLM prompt, CLIP-interrogator-style prompt, direct text-image judging; and the
1-5 rating normalisation."""
from __future__ import annotations

import json

import pytest
import torch
from regen_helpers import ToyGenerator, reference_images, replay

from regeneration.baselines import (
    INTERROGATOR_VOCAB,
    direct_prompts,
    interrogator_prompts,
    rank_modifiers,
)
from regeneration.asking.judging import judge_pairs, judge_text_image
from regeneration.scoring import normalize_rating
from regeneration.config import LoopConfig
from regeneration.core import RegenerationLoop


def test_rating_normalisation_by_hand():
    assert [normalize_rating(s) for s in (1, 2, 3, 4, 5)] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert normalize_rating(None) is None
    with pytest.raises(ValueError):
        normalize_rating(0)


def test_judge_pairs_counts_failures():
    refs = list(reference_images(2).values())
    judge = replay({("content", "0", 0, 0): json.dumps({"reason": "close", "score": 4}),
                    ("content", "1", 0, 0): json.dumps({"reason": "x", "score": 9}),
                    ("perceptual", "0", 0, 0): json.dumps({"reason": "fine", "score": 3}),
                    ("perceptual", "1", 0, 0): None})
    first, second = judge_pairs(judge, refs, refs[::-1])
    assert (first.content, first.content_norm, first.perceptual_norm) == (4, 0.75, 0.5)
    assert second.content is None and second.perceptual is None and len(second.failures) == 2
    content_req = next(r for _, r in judge.log if r.meta["stage"] == "content")
    perceptual_req = next(r for _, r in judge.log if r.meta["stage"] == "perceptual")
    assert len(content_req.images) == 2 and len(perceptual_req.images) == 1


def test_direct_text_image_judging():
    images = list(reference_images(2).values())
    judge = replay({("text_image", "a", 0, 0): json.dumps({"reason": "matches", "score": 5}),
                    ("text_image", "b", 0, 0): "five"})
    (s1, f1), (s2, f2) = judge_text_image(judge, images, ["a cat", "a dog"], items=["a", "b"])
    assert (s1, f1) == (5, None) and s2 is None and f2.stage == "text_image"
    assert "a cat" in judge.log[0][1].text


def test_direct_prompt_skips_the_iut():
    refs = reference_images(2)
    judge = replay({("direct_prompt", "ref0", 0, 0): json.dumps({"prompt": "a striped block"}),
                    ("direct_prompt", "ref1", 0, 0): "{}"})
    out = direct_prompts(judge, list(refs.values()), list(refs))
    assert (out[0].prompt, out[0].source) == ("a striped block", "direct")
    assert out[1].prompt is None and out[1].failures
    assert [r.meta["stage"] for _, r in judge.log] == ["direct_prompt"] * 2


def test_interrogator_ranks_vocabulary_by_clip(scorer):
    clip = scorer.encoders["clip"]
    refs = reference_images(2)
    vocab = {"medium": (1, ("a photograph", "an oil painting", "a 3d render")), "flavor": (2, ("sharp", "bokeh", "8k"))}
    picked = rank_modifiers(clip, list(refs.values()), vocab)
    img = torch.nn.functional.normalize(clip.embed(list(refs.values())).double(), dim=-1)
    for row, phrases in enumerate(picked):
        for (top_k, words), chosen in zip(vocab.values(), (phrases[:1], phrases[1:])):
            txt = torch.nn.functional.normalize(clip.embed_text(list(words)).double(), dim=-1)
            order = torch.argsort(img[row] @ txt.T, descending=True).tolist()[:top_k]
            assert chosen == [words[j] for j in order]
    judge = replay({("caption", "ref0", 0, 0): json.dumps({"caption": "a striped block."}),
                    ("caption", "ref1", 0, 0): json.dumps({"caption": "two bands"})})
    out = interrogator_prompts(judge, clip, list(refs.values()), list(refs))
    parts = out[0].prompt.split(", ")
    assert parts[0] == "a striped block" and out[0].source == "interrogator"
    assert len(parts) == 1 + sum(k for k, _ in INTERROGATOR_VOCAB.values())


@pytest.mark.parametrize("mode", ["direct", "interrogator", "user"])
def test_loop_runs_each_prompt_mode(tmp_path, scorer, mode):
    refs = reference_images(1)
    answers = {("variants", "ref0", 1, 0): json.dumps({"prompts": ["p one", "p two"]}),
               ("direct_prompt", "ref0", 0, 0): json.dumps({"prompt": "direct words"}),
               ("caption", "ref0", 0, 0): json.dumps({"caption": "a block"})}
    judge = replay(answers)
    config = LoopConfig(rounds=1, variants=2, prompt_mode=mode, final_mllm=False, interrogator="loop")
    loop = RegenerationLoop(judge, ToyGenerator(refs), scorer, str(tmp_path / mode), config=config)
    (result,) = loop.run(refs, user_prompts={"ref0": "user words"})
    assert result.status == "scored" and result.prompt in ("p one", "p two")
    variants = next(r for _, r in judge.log if r.meta["stage"] == "variants")
    expected = {"direct": "direct words", "interrogator": "a block, ", "user": "user words"}[mode]
    assert expected in variants.text
    assert not any(r.meta["stage"].startswith("iut") for _, r in judge.log)
    assert (tmp_path / mode / "items" / "ref0" / f"initial_{mode}.json").is_file()


def test_summarize_ratings_by_hand():
    from regeneration.asking.judging import MLLMScores
    from regeneration.scoring import summarize_ratings
    from regeneration.parsing import ParseFailure

    failure = ParseFailure("perceptual", "bad", "")
    ratings = [MLLMScores(content=5, perceptual=3), MLLMScores(content=2, perceptual=None, failures=[failure])]
    assert summarize_ratings(ratings) == {"mllm_content": (1.0 + 0.25) / 2, "mllm_perceptual": 0.5,
                                          "mllm_parse_failures": 1}
    assert summarize_ratings([MLLMScores(failures=[failure, failure])])["mllm_content"] is None
