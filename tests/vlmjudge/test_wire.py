"""Wire format pieces: option matching, request grouping, body building and parsing."""
import math

import pytest
from PIL import Image

from vlmjudge import Constraint, Decoding, Request
from vlmjudge.backends.openai import OpenAIJudge, _public_url
from vlmjudge.cache import cache_key
from vlmjudge.options import read_top_logprobs
from vlmjudge.serve import BadRequest
from vlmjudge.serve.parse import parse_chat_body
from vlmjudge.wire import (
    ImageURLs,
    first_token_alternatives,
    generate_body,
    grammar_extension,
    grouped_order,
    options_completion_body,
    options_from,
    probs_body,
)


def test_top_logprobs_count_an_option_as_the_next_word():
    alts = [(" Yes", math.log(0.5)), ("Yes", math.log(0.1)), (" No", math.log(0.2)), ("\nMaybe", math.log(0.2))]
    probs = read_top_logprobs(alts, ["Yes", "No"], "Answer:")  # after "Answer:" the forms " Yes", " No"
    assert probs == pytest.approx({"Yes": 0.5 / 0.7, "No": 0.2 / 0.7})
    assert probs.mass == pytest.approx(0.7) and not probs.truncated
    bare = read_top_logprobs(alts, ["Yes", "No"], "Answer:\n")  # after a newline "Yes"; "No" unlisted
    assert bare.truncated and set(bare.bounds) == {"No"} and bare.mass == pytest.approx(0.1)
    nothing = read_top_logprobs([("Perhaps", -0.1)], ["Yes", "No"], "")
    assert nothing.truncated and set(nothing.bounds) == {"Yes", "No"}
    cased = read_top_logprobs([("yes", -0.3), ("No", -2.0)], ["Yes", "No"], "")  # case matters
    assert cased.truncated and 0 < cased["Yes"] < 1 and cased.bounds["Yes"] <= math.exp(-2.0)


def test_an_option_missing_from_the_top_k_is_bounded_never_zero():
    """The case a real vLLM run met: " No" listed, " Yes" not: not No = 1.0."""
    alts = [("\n", math.log(0.99)), (" No", math.log(0.0012))] + [(f"t{i}", math.log(0.0002)) for i in range(18)]
    probs = read_top_logprobs(alts, ["Yes", "No"], "Answer:")
    assert probs.truncated and probs.bounds == {"Yes": pytest.approx(0.0002)}
    assert 0 < probs["Yes"] < 1 and 0 < probs["No"] < 1 and probs.mass == pytest.approx(0.0012)


def test_a_digit_hidden_behind_a_space_token_is_bounded():
    """Qwen tokenizers write " 1" as " " then "1": a listed " " may hide the options' forms."""
    alts = [(" ", math.log(0.8)), ("x", math.log(0.05))]
    probs = read_top_logprobs(alts, ["1", "2"], "Rating:")
    assert probs.truncated and probs.bounds == {"1": pytest.approx(0.8), "2": pytest.approx(0.8)}
    clear = read_top_logprobs([(" ", math.log(0.01)), (" 1", math.log(0.6)), (" 2", math.log(0.3))], ["1", "2"],
                              "Rating:")
    assert not clear.truncated and clear["1"] == pytest.approx(2 / 3)


def test_first_token_alternatives_read_top_logprobs_or_nothing():
    body = {"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": [
        {"token": "Yes", "logprob": -0.1, "top_logprobs": [{"token": "Yes", "logprob": -0.1},
                                                            {"token": "No", "logprob": -2.4}]}]}}]}
    assert first_token_alternatives(body) == [("Yes", -0.1), ("No", -2.4)]
    assert first_token_alternatives({"choices": [{"message": {"content": "Yes"}, "logprobs": None}]}) is None


def test_requests_sharing_an_image_are_grouped_in_callers_order():
    a, b = Image.new("RGB", (4, 4), "red"), Image.new("RGB", (4, 4), "blue")
    same_as_a = Image.new("RGB", (4, 4), "red")  # another object, same pixels
    reqs = [Request(images=[x], text=str(i)) for i, x in enumerate([a, b, same_as_a, b, a])]
    reqs.append(Request(text="no image"))
    assert grouped_order(reqs, ImageURLs()) == [0, 2, 4, 1, 3, 5]


def test_generate_body_carries_decoding_constraint_and_prefix():
    req = Request(images=[Image.new("RGB", (4, 4))], text="Rate.", system="Be fair.", prefix="Score:",
                  decoding=Decoding(max_new_tokens=7, temperature=0.5, top_p=0.9, seed=3, stop=("\n",)),
                  constraint=Constraint.ebnf('root ::= "1" | "2"', first_options=["1", "2"]))
    body = generate_body(req, "m", ImageURLs(), "guided_grammar")
    s, x = body.standard, body.extra
    assert (s["max_tokens"], s["temperature"], s["top_p"], s["seed"], s["stop"]) == (7, 0.5, 0.9, 3, ["\n"])
    assert s["messages"][0]["role"] == "system" and s["messages"][-1] == {"role": "assistant", "content": "Score:"}
    assert s["messages"][1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert x == {"continue_final_message": True, "add_generation_prompt": False,
                 "guided_grammar": 'root ::= "1" | "2"', "vlmjudge_first_options": ["1", "2"]}
    assert grammar_extension("g", "structured_outputs") == {"structured_outputs": {"grammar": "g"}}
    assert grammar_extension("g", "ebnf") == {"ebnf": "g"}
    with pytest.raises(ValueError):
        grammar_extension("g", "regex")


def test_server_rebuilds_the_callers_request():
    req = Request(images=[Image.new("RGB", (5, 3), (1, 2, 3))], text="Is it dark?", system="Judge.",
                  prefix="Answer:", decoding=Decoding(max_new_tokens=300, seed=4))
    call = parse_chat_body(generate_body(req, "m", ImageURLs(), "structured_outputs").merged())
    assert call.op == "generate" and call.request.content_hash() == req.content_hash()
    probs_call = parse_chat_body(probs_body(req, "m", ImageURLs(), ["Yes", "No"], 20).merged())
    assert probs_call.op == "choice_probs" and probs_call.options == ("Yes", "No")
    assert probs_call.request.content_hash() == req.content_hash()  # its own decoding travelled along


@pytest.mark.parametrize("body, message", [
    ({"messages": []}, "non-empty"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/a.png"}}]}]},
     "data URLs"),
    ({"messages": [{"role": "user", "content": "hi"}], "logprobs": True}, "unsupported"),
    ({"messages": [{"role": "user", "content": "hi"}], "vlmjudge_options": ["Yes"]}, "two distinct"),
    ({"messages": [{"role": "user", "content": "hi"}], "vlmjudge_first_options": ["Yes"]}, "grammar"),
    ({"messages": [{"role": "user", "content": "hi"}], "continue_final_message": True}, "assistant"),
    ({"messages": [{"role": "user", "content": "hi"}], "stream": True}, "stream"),
    ({"messages": [{"role": "user", "content": "hi"}], "ebnf": "root ::= \"a\"",
      "response_format": {"type": "json_object"}}, "one output constraint"),
    ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}, "max_tokens must be >= 1"),
])
def test_bad_bodies_get_clear_errors(body, message):
    with pytest.raises(BadRequest, match=message):
        parse_chat_body(body)


def test_server_probs_body_lists_options_by_probability():
    body = options_completion_body("m", {"Yes": 0.25, "No": 0.75, "Maybe": 0.0})
    top = body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert [t["token"] for t in top] == ["No", "Yes"] and top[0]["logprob"] == pytest.approx(math.log(0.75))
    assert body["choices"][0]["message"]["content"] == "No"
    carried = options_from(body, ["Yes", "No", "Maybe"])  # every option, zero included, for our own client
    assert carried == {"Yes": 0.25, "No": 0.75, "Maybe": 0.0} and carried.mass is None
    assert options_from(body, ["Yes", "No"]) is None


def test_key_and_base_url_handling(monkeypatch):
    monkeypatch.delenv("VLMJUDGE_NO_SUCH_KEY", raising=False)
    monkeypatch.setenv("VLMJUDGE_TEST_SOME_KEY", "sk-x")
    with pytest.raises(ValueError, match="VLMJUDGE_NO_SUCH_KEY"):
        OpenAIJudge("gpt-x", api_key_env="VLMJUDGE_NO_SUCH_KEY")
    local = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", api_key_env="VLMJUDGE_NO_SUCH_KEY")
    assert local.identity() == {"backend": "openai", "model": "m", "revision": None, "dtype": None,
                                "base_url": "http://127.0.0.1:9/v1"}
    other = OpenAIJudge("m", base_url="http://user:pw@other:1/v1/", revision="r1")
    assert other.identity()["revision"] == "r1"
    assert other.identity()["base_url"] == other.manifest()["base_url"] == "http://other:1/v1"
    assert cache_key(local.identity(), "generate", "h") != cache_key(other.identity(), "generate", "h")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env-server:2/v1")
    assert OpenAIJudge("m", api_key_env="VLMJUDGE_TEST_SOME_KEY").identity()["base_url"] == "http://env-server:2/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert OpenAIJudge("m", base_url=None, api_key_env="VLMJUDGE_TEST_SOME_KEY").identity()["base_url"] \
        == "https://api.openai.com/v1"
    assert _public_url("https://user:pw@host:8443/v1?token=abc") == "https://host:8443/v1"
    with pytest.raises(ValueError, match="grammar_field"):
        OpenAIJudge("m", base_url="http://h/v1", grammar_field="regex")
    assert OpenAIJudge("m", base_url="http://h/v1", concurrency=3).batch_size == 12


def test_the_client_backend_loads_no_server_machinery():
    """Client and server share vlmjudge.wire; importing the client must not pull in the server."""
    import subprocess
    import sys
    code = ("import sys, vlmjudge.backends.openai; print(sorted(m for m in sys.modules "
            "if m.startswith('vlmjudge.serve') or m in ('http.server', 'socketserver')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
