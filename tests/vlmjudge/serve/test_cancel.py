"""A client that disconnects cancels its request: dropped from the queue while it waits,
stopped at its next token while it decodes (the transformers backend's row control)."""
import json
import socket
import threading
import time

import pytest
from serving_support import MODEL

from vlmjudge import Answer, Request
from vlmjudge.judge import Judge
from vlmjudge.requests import CANCEL_META_KEY
from vlmjudge.serve import JudgeServer

STEP_S = 0.02


class _Stepper(Judge):
    """Decodes one 'token' per STEP_S up to max_new_tokens, honouring the cancel flag as the
    transformers backend does; records how many tokens each request got."""

    backend = "stepper"

    def __init__(self):
        super().__init__(model_id=MODEL)
        self.decoded = []  # (prompt text, tokens decoded, finish reason)

    def _generate(self, chunk):
        answers = []
        for r in chunk:
            cancelled = r.meta.get(CANCEL_META_KEY)
            n, reason = 0, "length"
            while n < r.decoding.max_new_tokens:
                time.sleep(STEP_S)
                n += 1
                if cancelled is not None and cancelled():
                    reason = "error"
                    break
            self.decoded.append((r.chat()[-1]["content"], n, reason))
            answers.append(Answer("x" * n if reason != "error" else "", reason, n))
        return answers

    def _choice_probs(self, chunk, options):
        return [{o: 1 / len(options) for o in options} for _ in chunk]


def _send(port, text, max_tokens):
    body = json.dumps({"messages": [{"role": "user", "content": text}], "max_tokens": max_tokens}).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    return sock


def _wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_disconnect_dequeues_a_waiting_request_and_stops_a_running_one():
    judge = _Stepper()
    with JudgeServer(judge, model_name=MODEL, max_batch=1, max_wait_s=0.0) as server:
        port = server.httpd.server_address[1]
        running = _send(port, "long one", 500)  # 500 steps: 10 s if nobody stops it
        _wait_for(lambda: server.batcher.status()["running"] == 1)
        waiting = _send(port, "queued one", 5)
        _wait_for(lambda: server.batcher.status()["waiting"] == 1)
        waiting.close()
        _wait_for(lambda: server.batcher.status()["cancelled"]["waiting"] == 1)
        started = time.monotonic()
        running.close()
        _wait_for(lambda: len(judge.decoded) == 1)
        stopped_after = time.monotonic() - started
        done = _send(port, "after", 3)  # the server goes on serving
        reply = done.recv(65536)
        done.close()
        status = server.batcher.status()
    text, tokens, reason = judge.decoded[0]
    assert text == "long one" and reason == "error" and tokens < 500
    assert stopped_after < 2.0  # stopped at the next token, not after the whole budget
    assert [d[0] for d in judge.decoded] == ["long one", "after"]  # the queued one never reached the judge
    assert status["cancelled"] == {"waiting": 1, "running": 1}
    assert reply.startswith(b"HTTP/1.1 200")


def test_identical_requests_run_once_and_one_leaving_does_not_stop_the_other():
    judge = _Stepper()
    with JudgeServer(judge, model_name=MODEL, max_batch=8, max_wait_s=1.0) as server:  # both in one round
        port = server.httpd.server_address[1]
        leaver, stayer = _send(port, "same", 20), _send(port, "same", 20)
        _wait_for(lambda: server.batcher.status()["running"] == 2)
        leaver.close()
        stayer.settimeout(10)
        reply = stayer.recv(65536)
        stayer.close()
    assert reply.startswith(b"HTTP/1.1 200")
    assert judge.decoded == [("same", 20, "length")] and server.batcher.batch_sizes == [1]


def test_row_control_closes_a_cancelled_row_at_the_next_token():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from vlmjudge.backends.hf.decoding.row_control import RowControl, RowPlan

    class _Tokenizer:
        def decode(self, ids, skip_special_tokens=True):
            return "".join(chr(97 + int(i) % 26) for i in ids)

    gone = threading.Event()
    plans = [RowPlan(max_new_tokens=10, cancelled=gone.is_set), RowPlan(max_new_tokens=10)]
    control = RowControl(plans, prompt_len=0, eos_ids=[99], tokenizer=_Tokenizer(), vocab_size=100)
    ids = torch.tensor([[1], [2]])
    assert control.after_token(ids).tolist() == [False, False]
    gone.set()
    ids = torch.tensor([[1, 3], [2, 4]])
    assert control.after_token(ids).tolist() == [True, False]  # the very next token closes it
    assert control.finish(ids) == [("", "error", 2), ("ce", "length", 2)]


def test_the_transformers_backend_passes_the_cancel_flag_to_its_row_plan():
    pytest.importorskip("transformers")
    from vlmjudge.backends.hf.judge import TransformersJudge

    flag = threading.Event().is_set
    request = Request(text="hi", meta={CANCEL_META_KEY: flag})
    plan = TransformersJudge.__new__(TransformersJudge)._plan(request, "hi")
    assert plan.cancelled is flag
