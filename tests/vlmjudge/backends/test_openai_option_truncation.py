"""A server whose top-k omits an option: the openai backend widens k, scores the option directly,
or returns the answer truncated and bounded, counted, and TerraVis records the decision as
failed, never as a certain No. The stub mimics what a vLLM run met: after "Answer:" the model
writes a newline (0.99); " No" is listed, " Yes" sits below the 20th token."""
import json
import math

import pytest
from PIL import Image
from openai_stub import QuietHandler, not_chat, stub_client, stub_server

from vlmjudge import Request

#: The first answer token's distribution, most likely first: " Yes" is 41st.
DISTRIBUTION = [("\n", 0.99), (" No", 0.0012)] + [(f" w{i}", 0.0002) for i in range(38)] + [(" Yes", 0.00015)]
#: What a direct scoring request reads for each option's form after "Answer:".
FORMS = {" Yes": 0.00015, " No": 0.0012}


class _Handler(QuietHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not_chat(self):  # no /tokenize: the backend reads options from the top-k
            return None
        self.server.asked.append(body)
        k = body.get("top_logprobs") or 0
        if k > self.server.max_k:
            return self._send_json(400, {"error": {"message": f"top_logprobs {k} exceeds {self.server.max_k}",
                                              "type": "invalid_request_error", "code": 400}})
        out = {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
               "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "\n"},
                            "logprobs": None}]}
        if body.get("logprobs"):
            top = [{"token": t, "logprob": math.log(p)} for t, p in DISTRIBUTION[:k]]
            out["choices"][0]["logprobs"] = {"content": [{**top[0], "top_logprobs": top}]}
        if "prompt_logprobs" in body and self.server.scores:
            written = body["messages"][-1]["content"]
            form = next(f for f in sorted(FORMS, key=len, reverse=True) if written.endswith(f))
            head = written[:-len(form)]
            out["prompt_logprobs"] = [None] + [{"7": {"logprob": -0.5, "rank": 1, "decoded_token": head}},
                                               {"9": {"logprob": math.log(FORMS[form]), "rank": 3,
                                                      "decoded_token": form}}]
        self._send_json(200, out)


def _ask():
    return [Request(images=[Image.new("RGB", (8, 8), "red")], text="Is it a photo?", prefix="Answer:")]


def test_an_unlisted_option_is_bounded_counted_never_zero(monkeypatch):
    with stub_server(_Handler, monkeypatch, max_k=20, scores=False, asked=[]) as (server, url):
        judge = stub_client(url, concurrency=1)
        probs = judge.choice_probs(_ask(), ["Yes", "No"])[0]
        raw = judge.choice_probs(_ask(), ["Yes", "No"], normalize=False)[0]
    assert probs.truncated and set(probs.bounds) == {"Yes"}
    assert 0 < probs["Yes"] < 1 and 0 < probs["No"] < 1  # not No = 1.0, as renormalising gave
    assert probs.bounds["Yes"] == pytest.approx(0.0002) and raw["Yes"] == pytest.approx(probs.bounds["Yes"])
    assert probs.mass == pytest.approx(0.0012) and probs.low_mass
    assert judge.stats.truncated_options == 2
    assert [b.get("top_logprobs") for b in server.asked if "prompt_logprobs" not in b].count(100) == 1  # refused once
    assert judge.manifest()["options_scored_directly"] == 0


def test_a_server_that_allows_a_larger_k_answers_in_full(monkeypatch):
    with stub_server(_Handler, monkeypatch, max_k=100, scores=False, asked=[]) as (server, url):
        judge = stub_client(url, concurrency=1)
        probs = judge.choice_probs(_ask(), ["Yes", "No"])[0]
    assert not probs.truncated and judge.stats.truncated_options == 0
    assert probs["Yes"] == pytest.approx(0.00015 / (0.00015 + 0.0012))  # 0.111, not 0 and not 1
    assert probs.mass == pytest.approx(0.00135) and probs.low_mass
    assert judge.manifest()["wider_top_logprobs"] == 1


def test_a_server_with_prompt_logprobs_scores_the_missing_option(monkeypatch):
    with stub_server(_Handler, monkeypatch, max_k=20, scores=True, asked=[]) as (server, url):
        judge = stub_client(url, concurrency=1)
        probs = judge.choice_probs(_ask(), ["Yes", "No"])[0]
    scored = [b for b in server.asked if "prompt_logprobs" in b]
    assert [b["messages"][-1]["content"] for b in scored] == ["Answer: Yes"]
    assert not probs.truncated and judge.manifest()["options_scored_directly"] == 1
    assert probs["Yes"] == pytest.approx(0.00015 / (0.00015 + 0.0012))


def test_terravis_fails_a_truncated_decision_and_says_so(monkeypatch):
    from terravis import TerraVis, load_pack
    pack = load_pack({"system": "Judge the image.", "eligibility": "Is it a real scene?",
                      "detection": "Answer Yes or No.",
                      "severity": "{type_name}: {aspect}, {evidence}. Major or Minor?"})
    with stub_server(_Handler, monkeypatch, max_k=20, scores=False, asked=[]) as (server, url):
        judge = stub_client(url, concurrency=1)
        tv = TerraVis(judge, pack=pack, decision="choice")
        record = tv.score([Image.new("RGB", (8, 8), "red")])[0]
    assert record.status == "failed" and record.score is None and record.eligible is None
    assert any("truncated" in e for e in record.errors) and record.low_mass == ["eligibility"]
    assert tv.last_counts["truncated"] == 1 and judge.stats.truncated_options == 1


def test_against_sglang_an_unlisted_option_is_bounded_without_asking_for_prompt_logprobs(monkeypatch):
    """SGLang's chat API has no prompt_logprobs: with server="sglang" the backend does not ask for
    them (a wasted request), widens k where allowed, and otherwise bounds the option."""
    with stub_server(_Handler, monkeypatch, max_k=20, scores=True, asked=[]) as (server, url):
        judge = stub_client(url, concurrency=1, server="sglang")
        probs = judge.choice_probs(_ask(), ["Yes", "No"])[0]
    assert not any("prompt_logprobs" in b for b in server.asked)
    assert probs.truncated and 0 < probs["Yes"] < 1 and judge.manifest()["options_scored_directly"] == 0
    assert judge.manifest()["server"] == "sglang"
