"""Option probabilities from an OpenAI-compatible server, never silently truncated.

A vLLM server is asked for the options' own token ids (`option_ids`): one request, the vllm
backend's numbers. Elsewhere a server shows the first answer token's top-k only. Where an option is
missing from it, renormalising over the options found would report it as 0 and the other as 1.
Instead, in order: ask again with a larger k (up to `max_top_logprobs`, while the server accepts it);
score the missing option directly (vLLM's `prompt_logprobs` on a request whose assistant prefix
ends with the option's form; SGLang's chat API has no such field); failing both, return the answer
truncated, the option at its upper bound (`vlmjudge.options.read_top_logprobs`). docs/judges.md.
"""
from __future__ import annotations

import logging
import math
from typing import Any, Sequence

from ...options import OptionProbs, read_top_logprobs, surface_form
from .replies import MalformedResponse, checked_logprob, first_choice
from .wire import WireBody, fallback_body

log = logging.getLogger("vlmjudge.openai")

#: The vLLM extension that returns the prompt tokens' log-probabilities (0: the prompt's own tokens only).
PROMPT_LOGPROBS_FIELD = "prompt_logprobs"


def prefix_of(body: WireBody) -> str:
    """The assistant prefix a request body continues ("" without one: the server's template then
    ends its assistant header, with a newline in the templates of the supported families)."""
    last = body.standard["messages"][-1] if body.standard["messages"] else {}
    content = last.get("content") if last.get("role") == "assistant" else ""
    return content if isinstance(content, str) else ""


def scoring_body(probs: WireBody, form: str) -> WireBody:
    """The request that scores `form` as the start of the answer: the probs request's messages
    with `form` appended to the assistant prefix (a prefix message added where there is none),
    one token generated, the prompt's log-probabilities asked for."""
    messages = [dict(m) for m in probs.standard["messages"]]
    if messages and messages[-1]["role"] == "assistant":
        messages[-1]["content"] = messages[-1]["content"] + form
    else:
        messages.append({"role": "assistant", "content": form})
    standard = {"model": probs.standard["model"], "messages": messages, "max_tokens": 1, "temperature": 0.0}
    extra = dict(probs.extra)
    extra.update({"continue_final_message": True, "add_generation_prompt": False, PROMPT_LOGPROBS_FIELD: 0})
    return WireBody(standard, extra)


def form_logprob(body: dict[str, Any] | None, form: str) -> float | None:
    """log P(form) from a `scoring_body` response: the prompt's last tokens that spell `form`,
    their log-probabilities added (teacher forcing). None when the server sent no prompt
    log-probabilities or its last tokens do not spell the form exactly."""
    entries = body.get(PROMPT_LOGPROBS_FIELD) if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return None
    written, total = "", 0.0
    for entry in reversed(entries):
        token = _prompt_token(entry)
        if token is None:
            return None
        written, total = token[0] + written, total + token[1]
        if written == form:
            return total
        if len(written) >= len(form) or not form.endswith(written):
            return None
    return None


def _prompt_token(entry: Any) -> tuple[str, float] | None:
    """(decoded token, logprob) of the prompt's own token at one position (`prompt_logprobs=0`
    lists that token alone; with more, it is the one vLLM ranks by its own prompt, listed first);
    None where the entry has no such token, MalformedResponse for a logprob that is none."""
    if not isinstance(entry, dict) or not entry:
        return None
    first = next(iter(entry.values()))
    if not isinstance(first, dict) or not isinstance(first.get("decoded_token"), str):
        return None
    return first["decoded_token"], checked_logprob(first.get("logprob"), f"{PROMPT_LOGPROBS_FIELD} logprob")


class OptionReading:
    """The probability path of `OpenAIJudge` (mixed into it): reads, widens, scores, bounds."""

    def _live_probs(self, body: WireBody, options: list[str]) -> OptionProbs:
        """Normalised option probabilities of one live request: by token id where the server reads
        them, else as `_live_raw` reads them; the one-hot of a short generation where the server
        gives no logprobs; `{}` (counted) where the request failed or its reply was malformed."""
        by_id = self._read_by_id(body, options, normalize=True)
        if by_id is not None:
            return by_id
        try:
            raw = self._raw_options(self._live(body), options, prefix_of(body))
        except self._unusable:
            self._count("failed_requests")
            return OptionProbs()
        if raw is not None:
            raw = self._untruncated(body, raw, options) if raw.truncated else raw
            return OptionProbs.from_raw(raw, options, bounds=raw.bounds)
        self._count("choice_probs_fallbacks")
        fallback = fallback_body(body, self.fallback_max_tokens)
        return self._one_hot(self._answer(self._live(fallback), fallback), options)

    def _raw_or_failed(self, first: dict[str, Any] | None, options: list[str], before: str) -> OptionProbs:
        """A response's raw option probabilities; `{}` (counted) where it failed, was malformed or
        has no logprobs."""
        try:
            raw = self._raw_options(first, options, before)
        except self._unusable:
            raw = None
        if raw is None:
            self._count("failed_requests")
            return OptionProbs()
        return raw

    def _live_raw(self, body: WireBody, options: list[str]) -> OptionProbs:
        """Raw option probabilities of one live request: by token id where the server reads them,
        else from the top-k, unseen options widened, scored or bounded."""
        by_id = self._read_by_id(body, options, normalize=False)
        if by_id is not None:
            return by_id
        raw = self._raw_or_failed(self._live(body), options, prefix_of(body))
        return self._untruncated(body, raw, options) if raw.truncated else raw

    def _probs_from(self, body: dict[str, Any] | None, options: list[str], before: str) -> OptionProbs | None:
        """Option probabilities, normalised over the options, from one response (bounded where
        unseen); `{}` (counted) for a failed or malformed one, None where it has no logprobs."""
        try:
            raw = self._raw_options(body, options, before)
        except self._unusable:
            self._count("failed_requests")
            return OptionProbs()
        return OptionProbs.from_raw(raw, options, bounds=raw.bounds) if raw is not None else None

    def _raw_options(self, first: dict[str, Any] | None, options: Sequence[str], before: str) -> OptionProbs | None:
        """Raw option probabilities from one response's first-token top-k after the prefix
        `before`; None without one; `_unusable` raised for a failed or malformed response."""
        alternatives = self._alternatives(first)
        return read_top_logprobs(alternatives, options, before, normalize=False) if alternatives else None

    def _untruncated(self, body: WireBody, raw: OptionProbs, options: Sequence[str]) -> OptionProbs:
        """`raw` with its unseen options found where the server allows (a larger top-k, then
        direct scoring); still truncated, with bounds, where it allows neither."""
        wider = self._wider(body, options)
        if wider is not None:
            raw = wider
            if not raw.truncated:
                return raw
        if self.score_unseen and self.server == "vllm" and not self._refused.get("prompt_logprobs"):
            scored = self._scored(body, raw, options)
            if scored is not None:
                return scored
        return raw

    def _wider(self, body: WireBody, options: Sequence[str]) -> OptionProbs | None:
        """The options read from a top-k of `max_top_logprobs`, or None where that is no larger,
        or the server refused it once (its limit; not asked again) or failed."""
        k = self.max_top_logprobs
        if k <= body.standard["top_logprobs"] or self._refused.get("top_logprobs"):
            return None
        wider = WireBody({**body.standard, "top_logprobs": k}, body.extra)
        try:
            again = self._send(wider)
        except self._refusal as exc:  # the server's limit is below k: remembered, not asked again
            log.warning("the server refused top_logprobs=%d (%s); options beyond its top-%d stay bounded",
                        k, exc, body.standard["top_logprobs"])
            self._refused["top_logprobs"] = True
            return None
        except self._gave_up:
            return None
        try:
            wider = self._raw_options(again, options, prefix_of(body))
        except self._unusable:  # malformed (counted): the bounds stand
            return None
        self._count("wider_top_logprobs")
        return wider

    def _scored(self, body: WireBody, raw: OptionProbs, options: Sequence[str]) -> OptionProbs | None:
        """`raw` with each unseen option scored directly (its form, `scoring_body`); None when
        the server gives no prompt log-probabilities (remembered: not asked again)."""
        values = dict(raw)
        for option in raw.bounds:
            form = surface_form(option, prefix_of(body))
            try:
                reply = self._send(scoring_body(body, form))
                first_choice(reply)  # a reply with an `error`, or two choices, is no score
                lp = form_logprob(reply, form)
            except (self._refusal, self._gave_up):
                lp = None
            except MalformedResponse as exc:  # counted; the bounds stand, the server is asked again later
                self._malformed(exc)
                return None
            if lp is None:
                if not self._refused.get("prompt_logprobs"):
                    log.warning("the server gives no prompt_logprobs; options beyond its top-k stay bounded")
                self._refused["prompt_logprobs"] = True
                return None
            values[option] = math.exp(lp)
        self._count("options_scored_directly", len(raw.bounds))
        return OptionProbs.from_raw(values, options, normalize=False)
