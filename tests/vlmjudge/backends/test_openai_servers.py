"""The request bodies the openai backend writes for each server family, checked on the wire format
(no server): vLLM reads an EBNF grammar in `structured_outputs`, SGLang in a top-level `ebnf`; both
read a JSON schema from `response_format` and continue an assistant prefix with
`continue_final_message`. One end-to-end check sends each through HTTP to a stub."""
import json

import pytest
from openai_stub import chat_stub, stub_client
from PIL import Image

from vlmjudge import Constraint, Decoding, Request
from vlmjudge.backends.openai import OpenAIJudge
from vlmjudge.wire import SERVERS, ImageURLs, fallback_body, generate_body, grammar_extension, probs_body

GRAMMAR = 'root ::= "1" | "2"'
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}


def _request(constraint=None, prefix="Score:"):
    return Request(images=[Image.new("RGB", (4, 4))], text="Rate.", system="Be fair.", prefix=prefix,
                   decoding=Decoding(max_new_tokens=7, temperature=0.5, top_p=0.9, seed=3, stop=("\n",)),
                   constraint=constraint)


@pytest.mark.parametrize("server, grammar_fields", [("vllm", {"structured_outputs": {"grammar": GRAMMAR}}),
                                                    ("sglang", {"ebnf": GRAMMAR})])
def test_an_ebnf_grammar_goes_where_the_server_reads_it(server, grammar_fields):
    body = generate_body(_request(Constraint.ebnf(GRAMMAR, first_options=["1", "2"])), "m", ImageURLs(), server)
    s, x = body.standard, body.extra
    assert (s["max_tokens"], s["temperature"], s["top_p"], s["seed"], s["stop"]) == (7, 0.5, 0.9, 3, ["\n"])
    assert s["messages"][0]["role"] == "system" and s["messages"][-1] == {"role": "assistant", "content": "Score:"}
    assert s["messages"][1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "response_format" not in s
    assert x == {"continue_final_message": True, "add_generation_prompt": False, **grammar_fields}
    assert grammar_extension(GRAMMAR, server) == grammar_fields


@pytest.mark.parametrize("server", SERVERS)
def test_a_json_schema_goes_as_response_format_for_every_server(server):
    body = generate_body(_request(Constraint.json_schema(SCHEMA), prefix=""), "m", ImageURLs(), server)
    rf = body.standard["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["schema"]["properties"]["score"]["type"] == "integer"
    assert body.extra == {}  # no prefix, no grammar: nothing beyond the OpenAI fields
    json.dumps(body.merged())  # the whole body is JSON


def test_probs_and_fallback_bodies_carry_no_extension_of_ours():
    probs = probs_body(_request(), "m", ImageURLs(), 20)
    assert (probs.standard["max_tokens"], probs.standard["logprobs"], probs.standard["top_logprobs"]) == (1, True, 20)
    assert probs.extra == {"continue_final_message": True, "add_generation_prompt": False}
    fallback = fallback_body(probs, 8)
    assert fallback.standard["max_tokens"] == 8 and "logprobs" not in fallback.standard
    assert fallback.extra == probs.extra and fallback.standard["messages"] == probs.standard["messages"]
    assert not any(k.startswith("vlmjudge") for b in (probs, fallback) for k in b.merged())


def test_an_unknown_server_family_is_refused():
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
