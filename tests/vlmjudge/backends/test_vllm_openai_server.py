"""The third backend: the project's openai backend against a real vLLM OpenAI server (fp32, full
logprobs, prefix caching, xgrammar without whitespace) started here on 127.0.0.1, over the same
checkpoint and requests as the in-process engine. Greedy texts and constrained outputs must equal;
option probabilities are compared and reported: the openai backend reads the server's top-20
logprobs (an option outside them is absent), so where every option is inside they agree."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from vlmjudge.requests import Constraint, Decoding, Request

SERVER_START_S = 900


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server_judge(vllm_checkpoint, tmp_path_factory):
    """`python -m vllm.entrypoints.openai.api_server` on a free local port, and an openai judge on it."""
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    args = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", vllm_checkpoint,
            "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
            "--max-model-len", "4096", "--max-logprobs", "-1", "--enable-prefix-caching", "--skip-mm-profiling",
            "--structured-outputs-config", json.dumps({"backend": "xgrammar", "disable_any_whitespace": True})]
    with open(log, "w") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the vLLM server exited ({proc.returncode}): {log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the vLLM server did not answer in {SERVER_START_S} s: {log.read_text()[-3000:]}")
                time.sleep(2)
        from vlmjudge.judge import load_judge
        os.environ.setdefault("VLMJUDGE_TEST_KEY", "EMPTY")
        yield load_judge("tiny", backend="openai", base_url=f"http://127.0.0.1:{port}/v1",
                         api_key_env="VLMJUDGE_TEST_KEY", concurrency=4)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


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
    for got, want in zip(served, engine):
        assert json.loads(got.text, strict=False)["answer"] in ("yes", "no") and got.finish_reason == "stop"
        # what differs: the server compiles `response_format` with xgrammar's compact separators, the
        # in-process backends the project's EBNF with ", " and ": "
        assert got.text.startswith('{"answer":"') and want.text.startswith('{"answer": "')


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
