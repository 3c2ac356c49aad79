"""How `OpenAIJudge` turns replies into answers and first-token alternatives, counting the refused.

Why apart from the client: `replies` says what is wrong with a reply; this mixin decides what
the judge does with it. A malformed reply fails its request (finish_reason "error", or `{}`
option probabilities), is counted in `stats.malformed_responses` and named in a warning; it is
never read as far as it goes, never replaced by a guess.
"""
from __future__ import annotations

import logging
from typing import Any

from ...options import OptionProbs
from ...requests import Answer
from ..replay import first_option
from .replies import MalformedResponse, answer_from, first_token_alternatives, usage_counts
from .wire import WireBody

log = logging.getLogger("vlmjudge.openai")


class UnusableReply(Exception):
    """A probability request failed (no response) or its reply was malformed (already counted)."""


class ReplyReading:
    """The reply-reading part of `OpenAIJudge` (mixed into it)."""

    def _answer(self, body: dict[str, Any] | None, asked: WireBody) -> Answer:
        """The Answer of a response body to the request `asked`; a failed (None) or malformed one
        (an answer longer than its max_tokens allow included) is counted and becomes
        finish_reason "error"."""
        if body is not None:
            try:
                answer = answer_from(body, asked.standard["max_tokens"])
                usage = usage_counts(body)
            except MalformedResponse as exc:
                self._malformed(exc)
            else:
                self._add_usage(*usage)
                return answer
        self._count("failed_requests")
        return Answer("", "error", 0)

    def _alternatives(self, body: dict[str, Any] | None) -> list[tuple[str, float]] | None:
        """The first token's (token, logprob) pairs, None where the server sent none; raises
        UnusableReply for a failed (None) or malformed (counted) response."""
        if body is None:
            raise UnusableReply("no response")
        try:
            alternatives = first_token_alternatives(body)
            self._add_read_usage(body)
        except MalformedResponse as exc:
            self._malformed(exc)
            raise UnusableReply(str(exc)) from exc
        return alternatives

    def _add_read_usage(self, body: dict[str, Any]) -> None:
        """Count a probability read's prompt tokens; its one sampled token is no answer, so no
        generated token counts (as in process); MalformedResponse for unusable usage fields."""
        prompt, _, cached = usage_counts(body)
        self._add_usage(prompt, 0, cached)

    def _malformed(self, exc: MalformedResponse) -> None:
        """Count a reply whose fields cannot be used; the warning names the field."""
        with self._lock:
            self.stats.malformed_responses += 1
        log.warning("unusable reply from %s (counted in malformed_responses): %s", self.endpoint(), exc)

    def _add_usage(self, prompt: int, completion: int, cached: int) -> None:
        """Add a response's prompt, completion and cached-prompt tokens to the stats."""
        with self._lock:
            self.stats.prefill_tokens += prompt
            self.stats.cached_prompt_tokens += cached
            self.stats.generated_tokens += completion

    def _one_hot(self, answer: Answer, options: list[str]) -> OptionProbs:
        """The leading option of a generated answer, one-hot and with no mass (nothing measured it)."""
        if not answer.ok:
            return OptionProbs()
        chosen = first_option(answer.text, options)
        if chosen is None:
            log.warning("choice_probs fallback: answer %r starts with none of %s", answer.text[:80], options)
            return OptionProbs()
        return OptionProbs({o: float(o == chosen) for o in options})
