"""The VQAScore-style baseline reads the raw P("Yes") (issue 24, item 4).

FAGER paper, Sec. 4.2 (Tab. 1): VQAScore "reformulates the prompt as a single yes/no question,
and uses the VQA model's predicted probability of answering 'Yes' as the score": the Yes
token's probability under the softmax over the whole vocabulary, not P(Yes) / (P(Yes) + P(No)).
"""
from __future__ import annotations

import math

import pytest

from fager.baselines import BASELINE_QUESTION_ID, VQAScoreBaseline, baseline_ab_test
from vlmjudge import Request

from fagent_helpers import keyed_replay, noise

# Hand-made distributions over a vocabulary with more than the two options (the rest elsewhere):
# factual image: P(Yes) 0.40, P(No) 0.10 -> normalised 0.80; generated: 0.50, 0.50 -> 0.50.
PROBS = {"1:factual": {"Yes": 0.40, "No": 0.10}, "1:generated": {"Yes": 0.50, "No": 0.50}}


def _baseline(**kwargs) -> VQAScoreBaseline:
    judge = keyed_replay({(k, BASELINE_QUESTION_ID): {"probs": p} for k, p in PROBS.items()})
    return VQAScoreBaseline(judge, **kwargs)


def test_raw_probability_does_not_flip_a_factual_pair():
    """Raw 0.40 < 0.50: the generated image wins the pair. Normalising over Yes/No would give
    0.80 > 0.50 and call it a factual win: the flip the issue reports."""
    raw, normalised = _baseline(), _baseline(normalize=True)
    assert raw.score([noise(1)], ["a mug"], ["1:factual"]) == [pytest.approx(0.40)]
    assert normalised.score([noise(1)], ["a mug"], ["1:factual"]) == [pytest.approx(0.80)]
    by_raw = baseline_ab_test(raw, [noise(1)], [noise(2)], ["a mug"], ["1"])
    by_normalised = baseline_ab_test(normalised, [noise(1)], [noise(2)], ["a mug"], ["1"])
    assert (by_raw.wins, by_raw.losses, by_raw.margins["1"]) == (0, 1, pytest.approx(-0.10))
    assert (by_normalised.wins, by_normalised.losses, by_normalised.margins["1"]) == (1, 0, pytest.approx(0.30))


def test_replay_serves_recorded_probabilities_as_recorded():
    judge = keyed_replay({("1:factual", BASELINE_QUESTION_ID): {"probs": {"Yes": 0.4, "No": 0.1}}})
    request = Request(text="Is it?", meta={"item_id": "1:factual", "question_id": BASELINE_QUESTION_ID})
    assert judge.choice_probs([request], ["Yes", "No"], normalize=False) == [{"Yes": 0.4, "No": 0.1}]
    assert judge.choice_probs([request], ["Yes", "No"]) == [{"Yes": pytest.approx(0.8), "No": pytest.approx(0.2)}]


def test_openai_backend_reads_raw_probabilities_from_top_logprobs(monkeypatch):
    """Top logprobs "Yes" ln 0.4, "Maybe" ln 0.3, "No" ln 0.1 (no prefix: the option is the bare
    word): raw Yes 0.4 and No 0.1; an option
    outside the top logprobs (here not widened nor scored) holds its bound, never 0, and the
    answer is truncated; a response without logprobs gives no score, never a one-hot."""
    from vlmjudge.backends.openai import OpenAIJudge
    monkeypatch.setenv("VLMJUDGE_TEST_KEY", "sk-test")
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", api_key_env="VLMJUDGE_TEST_KEY", concurrency=1,
                        max_top_logprobs=20, score_unseen=False, read_by_id=False)  # the top-logprobs reading
    top = [{"token": "Yes", "logprob": math.log(0.4)}, {"token": "Maybe", "logprob": math.log(0.3)},
           {"token": "No", "logprob": math.log(0.1)}]
    replies = iter([
        {"choices": [{"message": {"content": " Yes"}, "finish_reason": "length",
                      "logprobs": {"content": [{**top[0], "top_logprobs": top}]}}]},
        {"choices": [{"message": {"content": " Yes"}, "finish_reason": "length",
                      "logprobs": {"content": [{**top[0], "top_logprobs": top[:2]}]}}]},
        {"choices": [{"message": {"content": "Yes"}, "finish_reason": "length"}]},
    ])
    sent = []
    monkeypatch.setattr(judge, "_create", lambda body: sent.append(body) or next(replies))
    probs = judge.choice_probs([Request(text=f"Is it {i}?") for i in range(3)], ["Yes", "No"], normalize=False)
    assert probs[0] == {"Yes": pytest.approx(0.4), "No": pytest.approx(0.1)}
    assert probs[1] == {"Yes": pytest.approx(0.4), "No": pytest.approx(0.3)}  # bound: what the list leaves of 1
    assert probs[1].truncated and not probs[0].truncated and judge.stats.truncated_options == 1
    assert probs[2] == {} and judge.counters["failed_requests"] == 1
    assert all(not any(k.startswith("vlmjudge") for k in body.extra) for body in sent)


def test_tiny_transformers_judge_gives_the_full_softmax(tiny_judge):
    """normalize=False equals softmax(logits)[option id] computed here from the model's own logits
    (after "Answer:" the option is the token of " Yes", `vlmjudge.options`); normalize=True
    equals those divided by their total, which is the mass."""
    import torch
    request = Request(images=[noise(7)], text='Does this image show "a mug"?', prefix="Answer:")
    raw = tiny_judge.choice_probs([request], ["Yes", "No"], normalize=False)[0]
    normalised = tiny_judge.choice_probs([request], ["Yes", "No"])[0]
    text = tiny_judge.prompt_text(request)
    inputs = tiny_judge.processor(text=[text], images=[request.pil_images()[0]], return_tensors="pt")
    with torch.inference_mode():
        logits = tiny_judge.model(**inputs).logits[0, -1].float()
    tokenizer = tiny_judge.tokenizer
    full = torch.softmax(logits, dim=-1)
    by_hand = {word: full[tokenizer.encode(text + " " + word, add_special_tokens=False)[-1]].item()
               for word in ("Yes", "No")}
    assert raw["Yes"] == pytest.approx(by_hand["Yes"], rel=1e-4)
    assert raw["No"] == pytest.approx(by_hand["No"], rel=1e-4)
    assert raw["Yes"] + raw["No"] < 1.0 and raw.mass == pytest.approx(raw["Yes"] + raw["No"])
    assert normalised["Yes"] == pytest.approx(by_hand["Yes"] / sum(by_hand.values()), rel=1e-4)
    assert normalised.mass == pytest.approx(raw.mass, rel=1e-4)
    assert raw["Yes"] / (raw["Yes"] + raw["No"]) == pytest.approx(normalised["Yes"], rel=1e-4)
