"""Wire format pieces: option matching, request grouping, response reading, endpoint identity
(the bodies written for each server family: tests/vlmjudge/backends/test_openai_servers.py)."""
import math

import pytest
from PIL import Image

from vlmjudge import Request
from vlmjudge.backends.openai import OpenAIJudge
from vlmjudge.backends.openai.client import _public_url
from vlmjudge.backends.openai.replies import first_token_alternatives
from vlmjudge.backends.openai.wire import ImageURLs, grouped_order
from vlmjudge.cache import cache_key
from vlmjudge.options import read_top_logprobs


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
    with pytest.raises(ValueError, match="server must be one of"):
        OpenAIJudge("m", base_url="http://h/v1", server="regex")
    assert OpenAIJudge("m", base_url="http://h/v1", concurrency=3).batch_size == 12


def test_the_client_backend_loads_no_server_machinery():
    """Importing the client must not pull in the launcher or an HTTP server."""
    import subprocess
    import sys
    code = ("import sys, vlmjudge.backends.openai; print(sorted(m for m in sys.modules "
            "if m.startswith('vlmjudge.serve') or m in ('http.server', 'socketserver')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
