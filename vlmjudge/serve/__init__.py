"""`vlmjudge serve`: an OpenAI-compatible HTTP server over any Judge, so one GPU serves many.

Several processes or machines point the OpenAI-compatible backend (`backend="openai"`,
`base_url="http://HOST:PORT/v1"`) at one server; concurrent requests are micro-batched
into the judge's batched calls. Standard library only (`http.server`).

Endpoints: `GET /v1/models`, `GET /health`, `POST /v1/chat/completions` with
messages (text and base64 `image_url` data URLs; no URL is ever fetched), system turns,
`max_tokens` / `max_completion_tokens`, `temperature` (default 0: greedy), `top_p`,
`seed`, `stop`, `response_format` (`json_schema`, `json_object`), and these extensions:

- `continue_final_message: true` with a final assistant message: that message is the
  assistant prefix (`Request.prefix`) and the answer continues it (vLLM's semantics).
- EBNF grammars as `structured_outputs: {"grammar": ...}` (vLLM), `guided_grammar`
  (older vLLM) or `ebnf` (SGLang); JSON schemas also as `structured_outputs: {"json": ...}`
  or `guided_json`.
- `vlmjudge_first_options: [...]`: restrict the first answer token of a constrained
  answer to these words (`Constraint.first_options`).
- `vlmjudge_options: [...]` (at least two words): the server answers with
  `judge.choice_probs` over them, returned as the first token's `top_logprobs`
  (options with zero probability left out). `logprobs` without `vlmjudge_options` gets
  HTTP 400 "unsupported": a judge gives probabilities over named options, not a full top-k.

A request the judge fails on gets HTTP 500 (clients retry it). `--inject-faults RATE`
is a testing aid for clients' retry logic (see `vlmjudge.serve.faults`).

Hardening (`ServeLimits`, every field a flag): a bounded request queue (HTTP 503 with
Retry-After past it) behind a listen backlog at least as long, so clients that connect
at once are queued, not reset; caps on max_tokens (larger asks are lowered to the cap),
prompt tokens, body bytes and image pixels; socket read and whole-body timeouts (HTTP
408); the API key checked from the headers before any body is read, on every route but
`/health`; every bad body a 4xx JSON error and every handler failure a 500 JSON error;
a request whose client disconnects is cancelled (dropped from the queue, or stopped at
its next token by a backend that decodes token by token). `/health` reports the queue.

Modules: `server` (JudgeServer), `cli` (the `vlmjudge serve` flags and `python -m
vlmjudge.serve`), `handler` (HTTP), `batcher` (micro-batching), `parse` (request bodies
to judge calls, ServeLimits), `faults` (fault injection). The wire format the server
shares with the OpenAI-compatible client is `vlmjudge.wire`.
"""
from __future__ import annotations

from .cli import configure_serve, main, run_serve
from .faults import FaultInjector
from .parse import BadRequest, ServeLimits
from .server import MAX_BODY_BYTES, JudgeServer

__all__ = ["MAX_BODY_BYTES", "BadRequest", "FaultInjector", "JudgeServer", "ServeLimits", "configure_serve",
           "main", "run_serve"]
