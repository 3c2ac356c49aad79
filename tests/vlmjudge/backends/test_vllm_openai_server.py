"""The third backend: the project's openai backend against a real vLLM OpenAI server (fp32, full
logprobs, prefix caching, xgrammar without whitespace, the first-options processor) started by
`vlmjudge serve` on 127.0.0.1, over the same checkpoint and requests as the in-process engine.
Greedy texts, constrained outputs and first options must equal; option probabilities are compared.
Then faults, put between the backend and the server by a proxy (`fault_proxy`): each transient
one is retried to the real answer; one that lasts fails the request, counted; an option the
server's answers never show is bounded and counted, never a 0 or 1."""
import json

import pytest
from fault_proxy import FAULTS, fault_proxy

from vlmjudge.requests import Constraint, Decoding, Request


@pytest.fixture
def proxied(vllm_server, monkeypatch):
    """A fault proxy in front of the server, and a fast-retrying openai judge that goes through it."""
    from vlmjudge.judge import load_judge
    monkeypatch.setenv("VLMJUDGE_TEST_KEY", "EMPTY")
    with fault_proxy(vllm_server, slow_s=3.0) as proxy:
        judge = load_judge("tiny", backend="openai", base_url=proxy.url, api_key_env="VLMJUDGE_TEST_KEY",
                           concurrency=1, timeout_s=2.0, backoff_s=0.01, max_retries=2)
        yield proxy, judge


def ask(images, prefix="Answer:", **kw):
    return [Request(images=[image], text=q, system="Judge the image.", prefix=prefix, **kw)
            for image in images for q in ("Is there a cat in the image?", "Answer with Yes or No.")]


def test_greedy_and_constrained_texts_equal_the_engine(server_judge, vllm_judge, images):
    plain = ask(images[:3], prefix="", decoding=Decoding(max_new_tokens=12))
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]},
                                               "why": {"type": "string", "maxLength": 8}},
              "required": ["answer", "why"], "additionalProperties": False}
    constrained = ask(images[:3], prefix="", constraint=Constraint.json_schema(schema),
                      decoding=Decoding(max_new_tokens=48))
    served, engine = server_judge.generate(plain), vllm_judge.generate(plain)
    assert [a.text for a in served] == [a.text for a in engine]
    served, engine = server_judge.generate(constrained), vllm_judge.generate(constrained)
    # the server decodes under the grammar the in-process backends compile (", " and ": " separators)
    assert [a.text for a in served] == [a.text for a in engine]
    for got in served:
        assert json.loads(got.text)["answer"] in ("yes", "no") and got.finish_reason == "stop"
        assert got.text.startswith('{"answer": "')


def test_the_server_enforces_first_options(server_judge, vllm_judge, images):
    """`vlmjudge serve` loads the first-options processor: the probe finds it, and where the grammar
    allows Yes or No and the model leans to Yes, a restriction to No holds, as in process."""
    grammar = 'root ::= ("Yes" | "No") " because" [a-z ]{0,12}'
    free = ask(images, prefix="", constraint=Constraint.ebnf(grammar), decoding=Decoding(max_new_tokens=8))
    forced = ask(images, prefix="", constraint=Constraint.ebnf(grammar, first_options=["No"]),
                 decoding=Decoding(max_new_tokens=8))
    assert any(a.text.startswith("Yes") for a in server_judge.generate(free))  # the restriction changes something
    served, engine = server_judge.generate(forced), vllm_judge.generate(forced)
    assert [a.text for a in served] == [a.text for a in engine]
    assert all(a.text.startswith("No") for a in served)
    assert server_judge._enforces_first_options() is True and server_judge.counters["first_options_unenforced"] == 0


@pytest.mark.parametrize("options", [["Yes", "No"], ["A", "B", "C", "D"]])
def test_option_probabilities_equal_the_engine(server_judge, vllm_judge, images, options):
    """Behind a real vLLM server the openai backend reads options by the one definition
    (`vlmjudge.options`): it widens the top-k or scores an unseen option, so it gives the
    in-process engine's numbers and mass, and never a 0 or 1 for an option it did not see."""
    requests = ask(images)
    served = server_judge.choice_probs(requests, options)
    engine = vllm_judge.choice_probs(requests, options)
    assert len(served) == len(engine) == len(requests)
    for got, want in zip(served, engine):
        assert set(got) == set(options) and all(0 < got[o] < 1 for o in options)
        if got.truncated:  # bounded, counted: allowed, never certainty
            continue
        assert max(abs(got[o] - want[o]) for o in options) < 1e-4
        assert got.mass == pytest.approx(want.mass, abs=1e-4)
    truncated = sum(p.truncated for p in served)
    print(f"options {options}: {truncated} of {len(requests)} answers truncated "
          f"(judge.stats.truncated_options = {server_judge.stats.truncated_options})")


@pytest.mark.parametrize("options", [["Yes", "No"], ["A", "B", "C", "D"]])
def test_options_read_by_token_id_are_the_engine_s_in_one_request_each(vllm_server, vllm_judge, images, options):
    """`logprob_token_ids` with ids from the server's /tokenize: every option seen, the engine's
    numbers, one request per read (no wider top-k, no prompt_logprobs), nothing counted as generated."""
    from vlmjudge.judge import load_judge
    judge = load_judge("tiny", backend="openai", base_url=vllm_server, api_key_env="VLMJUDGE_TEST_KEY")
    requests = ask(images) + ask(images, prefix="")
    served, engine = judge.choice_probs(requests, options), vllm_judge.choice_probs(requests, options)
    for got, want in zip(served, engine):
        assert not got.truncated and max(abs(got[o] - want[o]) for o in options) < 1e-5
        assert got.mass == pytest.approx(want.mass, rel=1e-4)
    raw = judge.choice_probs(requests[:2], options, normalize=False)
    assert raw == [pytest.approx(dict(p), rel=1e-4) for p in vllm_judge.choice_probs(requests[:2], options,
                                                                                      normalize=False)]
    m = judge.manifest()
    assert m["options_by_token_id"] and m["wider_top_logprobs"] == m["options_scored_directly"] == 0
    assert judge.stats.generated_tokens == 0 and judge.stats.model_calls == len(requests) + 2


def test_each_image_goes_once_then_by_its_uuid(vllm_server, vllm_judge, images):
    """vLLM takes a uuid with no data once it holds the image: answers equal the engine's."""
    from vlmjudge.judge import load_judge
    judge = load_judge("tiny", backend="openai", base_url=vllm_server, api_key_env="VLMJUDGE_TEST_KEY")
    requests = ask(images[:2], prefix="", decoding=Decoding(max_new_tokens=6))
    requests += [Request(images=[r.images[0]], text="Describe it.", decoding=Decoding(max_new_tokens=6))
                 for r in requests[::2]]
    assert [a.text for a in judge.generate(requests)] == [a.text for a in vllm_judge.generate(requests)]
    assert judge.manifest()["images"] == {"transfer": "data", "uuids": True, "encoded": 2, "sent_with_data": 2,
                                          "sent_as_uuid": 4, "resent_after_miss": 0}


def test_an_image_the_server_does_not_hold_is_sent_again(vllm_server, vllm_judge):
    """A uuid alone for an image the server never saw (evicted): vLLM answers 400 "Cache miss";
    the backend sends the data and the answer is the engine's."""
    import numpy as np
    from PIL import Image
    from vlmjudge.backends.openai.images import UUID_PREFIX
    from vlmjudge.images import image_bytes_digest
    from vlmjudge.judge import load_judge
    fresh = Image.fromarray(np.random.default_rng(99).integers(0, 256, (40, 40, 3), dtype=np.uint8))
    judge = load_judge("tiny", backend="openai", base_url=vllm_server, api_key_env="VLMJUDGE_TEST_KEY")
    judge._images._held[UUID_PREFIX + image_bytes_digest(fresh)] = True  # as if sent before, then evicted
    request = ask([fresh], prefix="", decoding=Decoding(max_new_tokens=6))[:1]
    assert judge.generate(request)[0].text == vllm_judge.generate(request)[0].text
    images_sent = judge.manifest()["images"]
    assert images_sent["resent_after_miss"] == 1 and images_sent["uuids"] is True


def test_images_go_as_files_from_the_media_root(vllm_server, vllm_judge, media_root, images):
    """`vlmjudge serve --media-root` lets the server read the files the backend writes once there
    (raw PPM for these RGB images, which vLLM's image loader accepts)."""
    from vlmjudge.judge import load_judge
    judge = load_judge("tiny", backend="openai", base_url=vllm_server, api_key_env="VLMJUDGE_TEST_KEY",
                       media_dir=media_root, image_uuids=False)
    requests = ask(images[2:4], prefix="", decoding=Decoding(max_new_tokens=6))
    assert [a.text for a in judge.generate(requests)] == [a.text for a in vllm_judge.generate(requests)]
    assert judge.manifest()["images"] == {"transfer": "file", "uuids": False, "encoded": 2, "sent_with_data": 4,
                                          "sent_as_uuid": 0, "resent_after_miss": 0}
    assert len(list(media_root.glob("vlmjudge-images-*/*.ppm"))) >= 2


@pytest.mark.parametrize("fault", FAULTS)
def test_a_transient_fault_is_retried_to_the_real_answer(proxied, server_judge, images, fault):
    proxy, judge = proxied
    request = ask(images[:1], prefix="", decoding=Decoding(max_new_tokens=4))[:1]
    want = server_judge.generate(request)[0]
    proxy.faults.append(fault)
    got = judge.generate(request)[0]
    assert proxy.seen[0] == fault and not proxy.faults
    assert got.ok and got.text == want.text and judge.counters["retries"] == 1
    assert judge.counters["failed_requests"] == 0
    assert judge.stats.unparseable_responses == (fault == "garbled")


def test_a_fault_that_lasts_fails_the_request_never_a_score(proxied, images):
    proxy, judge = proxied
    request = ask(images[:1])[:1]
    proxy.faults.extend(["unavailable"] * 3)  # every attempt of the first request
    probs = judge.choice_probs(request, ["Yes", "No"])
    answers = judge.generate(ask(images[:1], prefix="", decoding=Decoding(max_new_tokens=2))[:1])
    assert probs == [{}] and judge.counters["failed_requests"] == 1 and judge.counters["retries"] == 2
    assert answers[0].ok  # the next request, with no fault, is answered


def test_an_option_the_answers_never_show_is_bounded_and_counted(proxied, images):
    """The proxy removes " Yes" from every top_logprobs list and drops prompt_logprobs: widening
    and direct scoring both fail, so the backend must return the answer truncated, Yes at its bound."""
    proxy, judge = proxied

    def hide_yes(_request, answer):
        for choice in answer.get("choices") or []:
            for position in ((choice.get("logprobs") or {}).get("content") or []):
                position["top_logprobs"] = [t for t in position.get("top_logprobs") or []
                                            if t["token"].strip() != "Yes"]
        answer.pop("prompt_logprobs", None)
        for choice in answer.get("choices") or []:
            choice.pop("prompt_logprobs", None)
        return answer

    proxy.rewrite = hide_yes
    judge.read_by_id = False  # the top-k reading of other servers (by id, vLLM shows every option)
    probs = judge.choice_probs(ask(images[:1])[:1], ["Yes", "No"])[0]
    assert probs.truncated and "Yes" in probs.bounds
    assert 0 < probs["Yes"] < 1 and 0 < probs["No"] < 1  # never the 0.0 / 1.0 renormalising would give
    assert judge.stats.truncated_options >= 1 and judge.manifest()["options_scored_directly"] == 0
