"""The openai backend (`load_judge(..., backend="openai")`): any OpenAI-compatible server.

vLLM (`vlmjudge serve` starts one), SGLang or a hosted API judges for many processes at once.
`client` holds the judge (retries, concurrency, prefix order, cache identity); `threads` its
request threads, kept across calls; `transport` the deadline of each attempt and the cap on each
reply (one connection pool per thread); `wire` the request bodies and `replies` the
checks of what comes back, pure functions tested without a server; `reading` what the judge does
with a reply it cannot use; `images` how each image is encoded once and sent once (file URLs, vLLM
uuids); `option_ids` option probabilities read by token id from a vLLM server; `option_probs` how
an option missing from another server's top-k is
widened, scored or bounded, never read as 0; `first_options_check` whether a server enforces
`first_options`; `batch_api` the Batch API.
"""
from __future__ import annotations

from .client import OpenAIJudge, OpenAIKeyError, OpenAIRequestError, OpenAIStats
from .wire import WireBody

__all__ = ["OpenAIJudge", "OpenAIKeyError", "OpenAIRequestError", "OpenAIStats", "WireBody"]
