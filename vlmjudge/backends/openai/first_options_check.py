"""Whether a server enforces `Constraint.first_options`, learnt once per judge and never assumed.

Why: without the restriction a constrained answer may start with an option other than the one
`choice_probs` ranks first, so records differ from the in-process backends'. A vLLM server
started by `vlmjudge serve` runs the first-options processor (`vllm_first_options`); another vLLM server
ignores the words in `vllm_xargs` without a word, so the backend asks once (`wire.first_options_probe`).
SGLang and hosted APIs get no restriction. Where it is not enforced, a warning says so once and
`counters["first_options_unenforced"]` counts the requests sent without it.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence

from ...requests import Request
from ..vllm_first_options import FIRST_OPTIONS_ARG
from .wire import first_options_probe

log = logging.getLogger("vlmjudge.openai")


class FirstOptionsCheck:
    """The first-options check of `OpenAIJudge` (mixed into it)."""

    _first_options_enforced: bool | None = None  # None until known

    def _note_first_options(self, requests: Sequence[Request]) -> None:
        """Count the requests with `first_options` the server will not enforce (probing once)."""
        n = sum(1 for r in requests if r.constraint is not None and r.constraint.first_options)
        if n and self._enforces_first_options() is False:
            self._count("first_options_unenforced", n)

    def _enforces_first_options(self) -> bool | None:
        """Whether the server restricts the first answer token; None while a probe could not tell."""
        if self._first_options_enforced is None:
            known = self._probe_first_options() if self.server == "vllm" else False
            if known is False:
                log.warning("%s does not enforce first_options (%s): constrained answers may start with "
                            "another option than choice_probs ranks first; serve with `vlmjudge serve` "
                            "for the in-process backends' answers", self.endpoint(),
                            "no first-options processor" if self.server == "vllm" else f"server={self.server}")
            self._first_options_enforced = known
        return self._first_options_enforced

    def _probe_first_options(self) -> bool | None:
        """Send `first_options_probe`: refused naming the argument -> enforced; answered -> not."""
        try:
            self._create(first_options_probe(self.model_id))
        except self._refusal as exc:
            return FIRST_OPTIONS_ARG in str(exc)
        except self._gave_up as exc:
            log.warning("could not learn whether %s enforces first_options: %s", self.endpoint(), exc)
            return None
        return False
