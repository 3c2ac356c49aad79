"""Option probabilities read by token id from a vLLM server: the vllm backend's reading, one request each.

Why: a server's top-k often lacks an option, and asking again (a wider top-k, then `prompt_logprobs`,
which its prefix cache does not serve) cost the served path 1.66 times the in-process engine's prompt
tokens. vLLM's chat API takes `logprob_token_ids` (vllm/entrypoints/openai/chat_completion/protocol.py):
the full-vocabulary log-probabilities of the ids named, at the first answer position, exactly what the
vllm backend reads in process. The client has no tokenizer, so the ids come from the server's own
(`/tokenize`, `/detokenize`) by the in-process rule: `single_token_ids` after the prompt's last
`TAIL_CHARS` characters, the prompt's end rendered by the server's chat template on a stand-in turn.
Where the server has no such routes or ignores the field, the top-k reading (`option_probs`) takes over.
"""
from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable, Sequence

from ...options import OptionProbs, single_token_ids
from ..vllm_first_options import TAIL_CHARS
from .option_probs import prefix_of
from .replies import MalformedResponse, checked_logprob, first_choice
from .wire import WireBody

log = logging.getLogger("vlmjudge.openai")

#: What the server writes for a token when asked for ids (`return_tokens_as_token_ids`).
TOKEN_ID_FORM = "token_id:"


class RemoteTokenizer:
    """The two calls `single_token_ids` makes of a tokenizer, answered by the server's routes."""

    def __init__(self, post: Callable[[str, dict[str, Any]], Any], model: str) -> None:
        self._post, self._model = post, model

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        found = self._post("/tokenize", {"model": self._model, "prompt": text, "add_special_tokens": add_special_tokens})
        return _token_list(found)

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.decode([i]) for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        found = self._post("/detokenize", {"model": self._model, "tokens": list(ids)})
        if not isinstance(found, dict) or not isinstance(found.get("prompt"), str):
            raise ValueError(f"/detokenize answered {str(found)[:120]}")
        return found["prompt"]

    def rendered_end(self, prefix: str) -> str:
        """The last `TAIL_CHARS` characters the chat template renders before an answer: a stand-in
        user turn, then the generation prompt, or the assistant `prefix` continued (as the request)."""
        messages = [{"role": "user", "content": "?"}] + ([{"role": "assistant", "content": prefix}] if prefix else [])
        found = self._post("/tokenize", {"model": self._model, "messages": messages, "add_special_tokens": False,
                                         "add_generation_prompt": not prefix, "continue_final_message": bool(prefix)})
        return self.decode(_token_list(found)[-TAIL_CHARS:])[-TAIL_CHARS:]


def ids_body(probs: WireBody, ids: Sequence[int]) -> WireBody:
    """`probs` (one greedy token with logprobs) asking for the logprobs of `ids`, written as ids."""
    return WireBody(dict(probs.standard), {**probs.extra, "logprob_token_ids": list(ids),
                                           "return_tokens_as_token_ids": True})


def logprobs_of_ids(body: dict[str, Any], ids: Sequence[int]) -> list[float] | None:
    """Each id's log-probability at the first answer position, None unless all are listed (a
    server that ignores `logprob_token_ids` lists its top-k only).

    Examples:
        >>> row = {"top_logprobs": [{"token": "token_id:7", "logprob": -0.1}, {"token": "token_id:9", "logprob": -2.5}]}
        >>> body = {"choices": [{"logprobs": {"content": [row]}}]}
        >>> logprobs_of_ids(body, [9, 7]), logprobs_of_ids(body, [9, 8])
        ([-2.5, -0.1], None)
    """
    logprobs = first_choice(body).get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        return None
    found: dict[int, float] = {}
    for k, entry in enumerate(content[0].get("top_logprobs") or ()):
        token = entry.get("token") if isinstance(entry, dict) else None
        if isinstance(token, str) and token.startswith(TOKEN_ID_FORM) and token[len(TOKEN_ID_FORM):].isdigit():
            found[int(token[len(TOKEN_ID_FORM):])] = checked_logprob(entry.get("logprob"), f"top_logprobs[{k}].logprob")
    return [found[i] for i in ids] if all(i in found for i in ids) else None


def _token_list(found: Any) -> list[int]:
    tokens = found.get("tokens") if isinstance(found, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise ValueError(f"/tokenize answered {str(found)[:120]}")
    return tokens


class OptionIds:
    """The by-id reading of `OpenAIJudge` (mixed into it): ids learnt once per prefix and option list."""

    _ids_lock = threading.Lock()

    def _option_token_ids(self, prefix: str, options: Sequence[str]) -> list[int] | None:
        """The options' token ids after a prompt that ends with `prefix`, or None where this server
        cannot read by id (remembered: not asked again); `_gave_up` when it could not be reached
        (nothing remembered)."""
        if self.server != "vllm" or not self.read_by_id or self._refused.get("logprob_token_ids"):
            return None
        key = (prefix, tuple(options))
        known = self.__dict__.setdefault("_ids_by_prefix", {})
        with self._ids_lock:
            if key not in known:
                known[key] = self._learn_ids(prefix, options)
            return known[key]

    def _learn_ids(self, prefix: str, options: Sequence[str]) -> list[int] | None:
        tokenizer = RemoteTokenizer(self._post_root, self.model_id)
        try:
            return single_token_ids(tokenizer, tokenizer.rendered_end(prefix), options)
        except (self._refusal, ValueError) as exc:
            log.warning("options %s are read from the top logprobs, not by token id: %s", list(options), exc)
            return None

    def _post_root(self, path: str, payload: dict[str, Any]) -> Any:
        """POST `payload` to a route at the server's root (beside /v1), through the retry loop."""
        root = self.endpoint().removesuffix("/v1")
        client = self._client()
        text = self._with_retries(lambda: client.post(root + path, body=payload, cast_to=str))
        return json.loads(text)  # a ValueError where it is not JSON: read from the top-k instead

    def _read_by_id(self, body: WireBody, options: list[str], normalize: bool) -> OptionProbs | None:
        """The options' probabilities from one request naming their ids; `OptionProbs()` (counted)
        when it failed; None where this server cannot read by id (the caller reads the top-k)."""
        try:
            ids = self._option_token_ids(prefix_of(body), options)
        except self._gave_up as exc:
            log.warning("could not learn the options' token ids: %s", exc)
            ids, response = [], None
        else:
            if ids is None:
                return None
            response = self._live(ids_body(body, ids))
        if response is None:
            self._count("failed_requests")
            return OptionProbs()
        try:
            logprobs = logprobs_of_ids(response, ids)
            if logprobs is not None:
                self._add_read_usage(response)
        except MalformedResponse as exc:
            self._malformed(exc)
            self._count("failed_requests")
            return OptionProbs()
        if logprobs is None:
            log.warning("%s ignores logprob_token_ids; options are read from the top logprobs", self.endpoint())
            self._refused["logprob_token_ids"] = True
            return None
        return OptionProbs.from_logprobs(dict(zip(options, logprobs)), options, normalize=normalize)

