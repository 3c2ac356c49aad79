"""On a vLLM server the openai backend reads option probabilities by token id (`logprob_token_ids`),
one request per read, with the ids found through the server's /tokenize and /detokenize by the
in-process rule; a server without those routes, or one that ignores the field, is read from its
top-k as before. Against a loopback stub with a toy tokenizer (a real server:
test_vllm_openai_server.py)."""
import json
import math
import re

import pytest
from openai_stub import QuietHandler, stub_client, stub_server
from PIL import Image

from vlmjudge import Request
from vlmjudge.options import OptionProbs

#: The toy tokenizer's words (longest first when it reads); any other character is a token of its own.
VOCAB = {"<|im_start|>": 1, "<|im_end|>": 2, "assistant": 3, "user": 4, "Answer:": 5, " Yes": 6, " No": 7,
         "Yes": 8, "No": 9, " Maybe": 10}
#: Each id's log-probability at the first answer position.
LOGPROBS = {6: math.log(0.5), 7: math.log(0.125), 8: math.log(0.25), 9: math.log(0.0625), 10: math.log(0.01)}
_WORDS = re.compile("|".join(re.escape(w) for w in sorted(VOCAB, key=len, reverse=True)) + "|.", re.S)


def encode(text):
    return [VOCAB.get(piece, 1000 + ord(piece[0])) for piece in _WORDS.findall(text)]


def decode(ids):
    words = {i: w for w, i in VOCAB.items()}
    return "".join(words.get(i) or chr(i - 1000) for i in ids)


def render(body):
    """The stub's chat template: ChatML, ending in the generation prompt or the continued message."""
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in body["messages"])
    if body.get("continue_final_message"):
        return text[: -len("<|im_end|>\n")]
    return text + "<|im_start|>assistant\n" if body.get("add_generation_prompt", True) else text


class _Handler(QuietHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        s = self.server
        s.paths.append(self.path)
        if self.path in ("/tokenize", "/detokenize") and not s.routes:
            return self._send_json(404, {"error": {"message": "Not Found", "code": 404}})
        if self.path == "/tokenize":
            return self._send_json(200, {"tokens": encode(render(body) if "messages" in body else body["prompt"])})
        if self.path == "/detokenize":
            return self._send_json(200, {"prompt": decode(body["tokens"])})
        s.chats.append(body)
        ids = body.get("logprob_token_ids") if s.reads_ids else None
        shown = ids if ids else sorted(LOGPROBS, key=LOGPROBS.get, reverse=True)[: body.get("top_logprobs") or 0]
        top = [{"token": f"token_id:{i}" if body.get("return_tokens_as_token_ids") else decode([i]),
                "logprob": LOGPROBS[i]} for i in shown]
        choice = {"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": " Yes"},
                  "logprobs": {"content": [{"token": " Yes", "logprob": LOGPROBS[6], "top_logprobs": top}]}}
        self._send_json(200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [choice], "usage": {"prompt_tokens": 9, "completion_tokens": 1}})


def _ask(prefix="Answer:", n=3):
    image = Image.new("RGB", (8, 8), "red")
    return [Request(images=[image], text=f"Is it a photo? {i}", prefix=prefix) for i in range(n)]


@pytest.fixture
def stub(monkeypatch):
    def start(routes=True, reads_ids=True):
        return stub_server(_Handler, monkeypatch, routes=routes, reads_ids=reads_ids, paths=[], chats=[])
    return start


def test_options_are_read_by_token_id_one_request_each(stub):
    with stub() as (server, url):
        judge = stub_client(url, concurrency=1)
        probs = judge.choice_probs(_ask(), ["Yes", "No"])
        raw = judge.choice_probs(_ask(prefix=""), ["Yes", "No"], normalize=False)
    assert [c["logprob_token_ids"] for c in server.chats] == [[6, 7]] * 3 + [[8, 9]] * 3  # " Yes" after "Answer:"
    assert all(c["return_tokens_as_token_ids"] for c in server.chats)
    want = OptionProbs.from_logprobs({"Yes": LOGPROBS[6], "No": LOGPROBS[7]}, ["Yes", "No"])
    assert probs[0] == pytest.approx({"Yes": 0.8, "No": 0.2}) and probs[0] == pytest.approx(want)
    assert probs[0].mass == pytest.approx(0.625) and not probs[0].truncated
    assert raw[0] == pytest.approx({"Yes": 0.25, "No": 0.0625})
    # the ids are learnt once per prefix: a chat /tokenize, a /detokenize, then the tail and each option
    assert server.paths.count("/v1/chat/completions") == 6 and len(server.paths) - 6 == 2 * 5
    assert judge.stats.generated_tokens == 0 and judge.stats.prefill_tokens == 6 * 9  # reads generate nothing
    assert judge.manifest()["options_by_token_id"] and judge.counters["wider_top_logprobs"] == 0


def test_an_option_beyond_the_top_k_is_read_in_full_by_id(stub):
    """" Maybe" is far below the top 2: by id it is read, not bounded."""
    with stub() as (server, url):
        judge = stub_client(url, concurrency=1, top_logprobs=2)
        probs = judge.choice_probs(_ask(n=1), ["Yes", "Maybe"])[0]
    assert not probs.truncated and probs["Maybe"] == pytest.approx(0.01 / 0.51)
    assert len(server.chats) == 1


def test_without_the_routes_options_are_read_from_the_top_k(stub):
    with stub(routes=False) as (server, url):
        judge = stub_client(url, concurrency=1)
        probs = judge.choice_probs(_ask(), ["Yes", "No"])
    assert probs[0] == pytest.approx({"Yes": 0.8, "No": 0.2})
    assert all("logprob_token_ids" not in c for c in server.chats) and len(server.chats) == 3
    assert server.paths.count("/tokenize") == 1  # refused once, remembered


def test_a_server_that_ignores_the_ids_is_read_from_the_top_k_from_then_on(stub):
    """Its top 2 (" Yes", "Yes") lack " Maybe": the by-id read finds no id 10, so the top-k path
    takes over (the top 2, then a wider top-k) and the ids are not asked for again."""
    with stub(reads_ids=False) as (server, url):
        judge = stub_client(url, concurrency=1, top_logprobs=2)
        probs = judge.choice_probs(_ask(n=2), ["Yes", "Maybe"])
    assert probs[0] == pytest.approx({"Yes": 0.5 / 0.51, "Maybe": 0.01 / 0.51})
    asked = [("logprob_token_ids" in c, c["top_logprobs"]) for c in server.chats]
    assert asked == [(True, 2), (False, 2), (False, 100), (False, 2), (False, 100)]  # one request wasted
    assert not judge.manifest()["options_by_token_id"]


def test_options_that_are_not_one_token_are_read_from_the_top_k(stub):
    with stub() as (server, url):
        judge = stub_client(url, concurrency=1)
        probs = judge.choice_probs(_ask(n=1), ["Yes", "Nope"])[0]
    assert all("logprob_token_ids" not in c for c in server.chats)
    assert probs.truncated and "Nope" in probs.bounds  # the top-k path's answer: bounded, never 0


def test_other_servers_never_ask_for_ids(stub):
    with stub() as (server, url):
        stub_client(url, concurrency=1, server="sglang").choice_probs(_ask(n=1), ["Yes", "No"])
        stub_client(url, concurrency=1, read_by_id=False).choice_probs(_ask(n=1), ["Yes", "No"])
    assert server.paths == ["/v1/chat/completions"] * 2
