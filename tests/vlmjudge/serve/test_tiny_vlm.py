"""A tiny random Qwen3-VL behind `vlmjudge serve` answers over HTTP as it does in-process."""
import pytest

from vlmjudge import Constraint, Decoding, Request, load_judge
from vlmjudge.serve import JudgeServer

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_judge(tiny_vlm_path):
    """The suite's shared tiny Qwen3-VL (yes_bias 0), loaded once for this module."""
    from vlmjudge.backends.hf.judge import TransformersJudge
    return TransformersJudge(tiny_vlm_path("qwen3_vl"), batch_size=4)


def _requests(images, n=8, **decoding):
    """n requests, two questions per image in turn (so two requests share each image prefix)."""
    questions = ["Is there a cat?", "Does the image show a red car on the street?"]
    return [Request(images=[images[i // 2]], text=questions[i % 2], prefix="Answer:",
                    decoding=Decoding(**decoding)) for i in range(n)]


def _same_model(judge):
    from vlmjudge.backends.hf.judge import TransformersJudge
    return TransformersJudge(judge.model, judge.processor, batch_size=4)


def test_tiny_qwen_over_http_matches_in_process(tiny_judge, noise):
    images = noise(4, seed=7)
    probs_requests = _requests(images)
    gen_requests = _requests(images, 4, max_new_tokens=6)
    constrained = [Request(images=r.images, text=r.text, prefix="Answer:", decoding=Decoding(max_new_tokens=4),
                           constraint=Constraint.ebnf('root ::= (" Yes" | " No") " because"',
                                                      first_options=["Yes", "No"])) for r in gen_requests[:2]]
    local = _same_model(tiny_judge)
    expected_probs = local.choice_probs(probs_requests, ["Yes", "No"])
    expected_text = [a.to_json() for a in local.generate(gen_requests + constrained)]

    server_judge = _same_model(tiny_judge)
    with JudgeServer(server_judge, model_name="tiny", max_wait_s=0.02) as server:
        client = load_judge("tiny", backend="openai", base_url=server.url + "/v1", concurrency=4, timeout_s=30)
        got_probs = client.choice_probs(probs_requests, ["Yes", "No"])
        got_text = [a.to_json() for a in client.generate(gen_requests + constrained)]
    for got, want in zip(got_probs, expected_probs):
        assert set(got) == {"Yes", "No"}
        assert all(abs(got[o] - want[o]) < 1e-4 for o in got), (got, want)
    assert len({round(p["Yes"], 3) for p in expected_probs}) > 1  # the images matter: not a constant
    assert got_text == expected_text
    assert all(a["text"].split()[0] in ("Yes", "No") for a in got_text[-2:])
    assert client.counters["choice_probs_fallbacks"] == 0 and client.counters["retries"] == 0
    assert server_judge.stats.model_calls == 8 + 6 and max(server.batcher.batch_sizes) > 1
