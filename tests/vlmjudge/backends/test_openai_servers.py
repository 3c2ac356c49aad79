"""The request bodies the openai backend writes for each server family, checked on the wire format
(no server): vLLM and SGLang get the grammar the in-process backends compile (vLLM in
`structured_outputs`, SGLang in a top-level `ebnf`), vLLM also the first options in `vllm_xargs`; a
hosted API a `response_format` JSON schema and no grammar. Whether a vLLM server enforces the first
options is probed once. End-to-end checks send each through HTTP to a stub."""
import json
import logging

import pytest
from openai_stub import canned, chat_stub, stub_client
from PIL import Image

from vlmjudge import Constraint, Decoding, Request
from vlmjudge.backends.vllm_first_options import FIRST_OPTIONS_ARG, check_params
from vlmjudge.backends.openai import OpenAIJudge
from vlmjudge.grammar import constraint_to_ebnf
from vlmjudge.backends.openai.wire import SERVERS, ImageURLs, fallback_body, generate_body, grammar_extension, probs_body

GRAMMAR = 'root ::= "1" | "2"'
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}


def _request(constraint=None, prefix="Score:", text="Rate."):
    return Request(images=[Image.new("RGB", (4, 4))], text=text, system="Be fair.", prefix=prefix,
                   decoding=Decoding(max_new_tokens=7, temperature=0.5, top_p=0.9, seed=3, stop=("\n",)),
                   constraint=constraint)


@pytest.mark.parametrize("server, grammar_fields", [
    ("vllm", {"structured_outputs": {"grammar": GRAMMAR}, "vllm_xargs": {FIRST_OPTIONS_ARG: ["1", "2"]}}),
    ("sglang", {"ebnf": GRAMMAR})])
def test_an_ebnf_grammar_goes_where_the_server_reads_it(server, grammar_fields):
    body = generate_body(_request(Constraint.ebnf(GRAMMAR, first_options=["1", "2"])), "m", ImageURLs(), server)
    s, x = body.standard, body.extra
    assert (s["max_tokens"], s["temperature"], s["top_p"], s["seed"], s["stop"]) == (7, 0.5, 0.9, 3, ["\n"])
    assert s["messages"][0]["role"] == "system" and s["messages"][-1] == {"role": "assistant", "content": "Score:"}
    assert s["messages"][1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "response_format" not in s
    assert x == {"continue_final_message": True, "add_generation_prompt": False, **grammar_fields}
    assert grammar_extension(GRAMMAR, server) == {k: v for k, v in grammar_fields.items() if k != "vllm_xargs"}


@pytest.mark.parametrize("server, field", [("vllm", "structured_outputs"), ("sglang", "ebnf")])
def test_a_json_schema_goes_to_a_local_server_as_the_in_process_grammar(server, field):
    """The server decodes under the grammar the transformers and vllm backends compile (one-line JSON,
    ", " separators, strict bounded strings), not a schema it compiles its own way."""
    constraint = Constraint.json_schema(SCHEMA, first_options=["1"])
    body = generate_body(_request(constraint, prefix=""), "m", ImageURLs(), server)
    assert "response_format" not in body.standard
    grammar = body.extra[field]["grammar"] if server == "vllm" else body.extra[field]
    assert grammar == constraint_to_ebnf(constraint) and "root ::=" in grammar
    assert ("vllm_xargs" in body.extra) == (server == "vllm")
    json.dumps(body.merged())  # the whole body is JSON


def test_a_hosted_api_gets_a_response_format_schema_and_no_grammar():
    body = generate_body(_request(Constraint.json_schema(SCHEMA, first_options=["1"]), prefix=""), "m",
                         ImageURLs(), "openai")
    rf = body.standard["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["schema"]["properties"]["score"]["type"] == "integer"
    assert body.extra == {}  # no prefix, no extension: nothing beyond the OpenAI fields
    with pytest.raises(ValueError, match="takes no ebnf grammar"):
        generate_body(_request(Constraint.ebnf(GRAMMAR)), "m", ImageURLs(), "openai")


def test_the_processor_refuses_malformed_restrictions():
    check_params({FIRST_OPTIONS_ARG: ["Yes", "No"]})
    check_params(None)
    for bad in ([], "Yes", [""], [1]):
        with pytest.raises(ValueError, match=FIRST_OPTIONS_ARG):
            check_params({FIRST_OPTIONS_ARG: bad})


def _vllm_like(processor: bool):
    """A stub answer that refuses, as vLLM's admission check does when the processor is loaded, a
    request naming no option words."""
    def answer(body):
        words = (body.get("vllm_xargs") or {}).get(FIRST_OPTIONS_ARG)
        if processor and words is not None:
            try:
                check_params(body["vllm_xargs"])
            except ValueError as exc:
                return 400, str(exc)
        return canned(body)
    return answer


def test_a_server_without_the_processor_is_found_once_and_counted(monkeypatch, caplog):
    constrained = [_request(Constraint.ebnf(GRAMMAR, first_options=["1", "2"]), text=f"Rate {i}.") for i in range(3)]
    with chat_stub(monkeypatch, answer=_vllm_like(processor=False)) as (stub, url):
        judge = stub_client(url, concurrency=1)
        with caplog.at_level(logging.WARNING, logger="vlmjudge.openai"):
            judge.generate(constrained[:2])
            judge.generate(constrained[2:] + [_request()])
    probes = [b for b in stub.bodies if (b.get("vllm_xargs") or {}).get(FIRST_OPTIONS_ARG) == []]
    assert len(probes) == 1 and len(stub.bodies) == 5
    assert judge.counters["first_options_unenforced"] == 3 == judge.manifest()["first_options_unenforced"]
    assert sum("does not enforce first_options" in r.getMessage() for r in caplog.records) == 1


def test_a_server_with_the_processor_is_trusted(monkeypatch, caplog):
    with chat_stub(monkeypatch, answer=_vllm_like(processor=True)) as (stub, url):
        judge = stub_client(url, concurrency=1)
        with caplog.at_level(logging.WARNING, logger="vlmjudge.openai"):
            answers = judge.generate([_request(Constraint.ebnf(GRAMMAR, first_options=["1", "2"]), text=t)
                                      for t in ("Rate.", "Rate again.")])
    assert all(a.ok for a in answers) and judge.counters["first_options_unenforced"] == 0
    assert len(stub.bodies) == 3 and not caplog.records  # the probe (refused), then the two requests


@pytest.mark.parametrize("server", ["sglang", "openai"])
def test_other_servers_are_not_probed_and_say_so(monkeypatch, server):
    with chat_stub(monkeypatch) as (stub, url):
        judge = stub_client(url, server=server, concurrency=1)
        judge.generate([_request(Constraint.json_schema(SCHEMA, first_options=["1"]))])
    assert len(stub.bodies) == 1 and judge.counters["first_options_unenforced"] == 1


def test_probs_and_fallback_bodies_carry_no_extension_of_ours():
    probs = probs_body(_request(), "m", ImageURLs(), 20)
    assert (probs.standard["max_tokens"], probs.standard["logprobs"], probs.standard["top_logprobs"]) == (1, True, 20)
    assert probs.extra == {"continue_final_message": True, "add_generation_prompt": False}
    fallback = fallback_body(probs, 8)
    assert fallback.standard["max_tokens"] == 8 and "logprobs" not in fallback.standard
    assert fallback.extra == probs.extra and fallback.standard["messages"] == probs.standard["messages"]
    assert not any(k.startswith("vlmjudge") for b in (probs, fallback) for k in b.merged())


def test_an_unknown_server_family_is_refused():
    assert SERVERS == ("vllm", "sglang", "openai")
    with pytest.raises(ValueError, match="server must be one of"):
        OpenAIJudge("m", base_url="http://h/v1", server="tgi")
    with pytest.raises(ValueError, match="server must be one of"):
        grammar_extension(GRAMMAR, "guided_grammar")


@pytest.mark.parametrize("server, field", [("vllm", "structured_outputs"), ("sglang", "ebnf")])
def test_the_backend_sends_the_server_s_field_over_http(monkeypatch, server, field):
    with chat_stub(monkeypatch) as (stub, url):
        judge = stub_client(url, server=server, concurrency=1)
        judge.generate([_request(Constraint.ebnf(GRAMMAR))])
    sent = stub.bodies[0]
    assert field in sent and all(other not in sent for other in {"structured_outputs", "ebnf"} - {field})
    assert sent["continue_final_message"] is True and judge.manifest()["server"] == server
