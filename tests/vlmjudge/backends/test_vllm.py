"""The vllm backend against the transformers backend on one tiny vLLM-compatible Qwen3-VL in fp32:
the same requests give option probabilities within 1e-4, equal greedy texts, constrained outputs
that parse (and are equal), and the engine's prefix cache and records show in stats and manifest."""
import json

import pytest

from vlmjudge.requests import Constraint, Decoding, Request

TOL = 1e-4
QUESTIONS = ["Is there a cat in the image?", "Does the image show a red car on the street?", "Answer with Yes or No."]


def ask(images, prefix="Answer:", system="Judge the image.", **kw):
    return [Request(images=[image], text=q, system=system, prefix=prefix, **kw)
            for image in images for q in QUESTIONS]


@pytest.mark.parametrize("options", [["Yes", "No"], ["A", "B", "C", "D"]])
@pytest.mark.parametrize("prefix", ["Answer:", ""])
def test_option_probabilities_agree(vllm_judge, hf_judge, images, options, prefix):
    requests = ask(images, prefix=prefix)
    for normalize in (True, False):
        ours = vllm_judge.choice_probs(requests, options, normalize=normalize)
        ref = hf_judge.choice_probs(requests, options, normalize=normalize)
        worst = max(abs(a[o] - b[o]) for a, b in zip(ours, ref) for o in options)
        assert worst < TOL, (normalize, worst)
    spread = max(max(p[o] for p in ref) - min(p[o] for p in ref) for o in options)
    assert spread > 2 * TOL  # requests differ by more than the tolerance: the agreement says something


def test_greedy_texts_agree(vllm_judge, hf_judge, images):
    requests = ask(images[:3], prefix="", decoding=Decoding(max_new_tokens=12))
    ours, ref = vllm_judge.generate(requests), hf_judge.generate(requests)
    assert [a.text for a in ours] == [a.text for a in ref]
    assert [a.finish_reason for a in ours] == [a.finish_reason for a in ref]
    assert len({a.text for a in ref}) > 1


SCHEMA = {"type": "object", "properties": {
    "answer": {"enum": ["yes", "no", "unknown"]},
    "rationale": {"type": "string", "maxLength": 12}}, "required": ["answer", "rationale"],
    "additionalProperties": False}


def test_json_constrained_outputs_parse_and_agree(vllm_judge, hf_judge, images):
    requests = ask(images[:3], prefix="", constraint=Constraint.json_schema(SCHEMA),
                   decoding=Decoding(max_new_tokens=64))
    ours, ref = vllm_judge.generate(requests), hf_judge.generate(requests)
    for answer in ours:
        parsed = json.loads(answer.text, strict=False)  # a random model may write control characters
        assert answer.finish_reason == "stop" and parsed["answer"] in ("yes", "no", "unknown"), answer
        assert answer.text.startswith('{"answer": "')  # one-line JSON, the project's separators, no padding
    assert [a.text for a in ours] == [a.text for a in ref]


def test_first_options_start_with_the_top_option(vllm_judge, hf_judge, images):
    grammar = 'root ::= (" Yes" | " No") ". " [a-z]{1,6}'
    requests = ask(images, constraint=Constraint.ebnf(grammar, first_options=["Yes", "No"]),
                   decoding=Decoding(max_new_tokens=12))
    ours, ref = vllm_judge.generate(requests), hf_judge.generate(requests)
    probs = hf_judge.choice_probs(ask(images), ["Yes", "No"])
    assert [a.text.split(".")[0].strip() for a in ours] == [max(p, key=p.get) for p in probs]
    assert [a.text for a in ours] == [a.text for a in ref]


def test_prefix_cache_hits_show_in_stats(vllm_judge, images):
    system = "Judge the image: its objects, their colours, their places and the light. " * 3  # > 2 blocks
    vllm_judge.choice_probs(ask(images[:2], system=system), ["Yes", "No"])
    before = vllm_judge.stats.prefix_cache_tokens
    vllm_judge.choice_probs(ask(images[:2], prefix="Then:", system=system), ["Yes", "No"])  # same prefixes
    stats = vllm_judge.stats.as_dict()
    assert vllm_judge.stats.prefix_cache_tokens > before
    assert 0 < stats["prefix_cache_hit_rate"] < 1 and stats["prefill_tokens"] < stats["prompt_tokens"]
    assert stats["prefix_cache_hits"] > 0


def test_identity_and_manifest(vllm_judge, hf_judge):
    ident, manifest = vllm_judge.identity(), vllm_judge.manifest()
    assert ident["backend"] == "vllm" and ident["checkpoint"] == hf_judge.identity()["checkpoint"]
    assert manifest["engine"]["enable_prefix_caching"] and manifest["libraries"]["vllm"]
    assert manifest["dtype"] == "float32" and manifest["device"] == "cpu"


@pytest.mark.parametrize("prefix", ["Answer:", ""])
def test_option_words_map_to_the_ids_the_backend_sends(vllm_judge, images, prefix):
    """The server's processor finds an option's id from the prompt's token ids (it has no prompt
    text); it must be the id the in-process backend finds from the rendered prompt."""
    from vlmjudge.backends.vllm_first_options import first_ids_after
    tok = vllm_judge.tokenizer
    for request in ask(images[:1], prefix=prefix):
        text = vllm_judge.prompt_text(request)
        ids = tok.encode(text, add_special_tokens=False)
        for options in (["Yes", "No"], ["A", "B", "C", "D"]):
            assert first_ids_after(tok, ids, options) == vllm_judge.option_ids(text, options)
