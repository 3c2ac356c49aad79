"""The `first_options` restriction inside vLLM's engine, for the vllm backend and for `vlmjudge serve`.

Why one logits processor for both: constrained greedy decoding must start with the option
`choice_probs` ranks first, as on the transformers backend, whether vLLM runs in this process or
behind its OpenAI server. In process the backend sends the option token ids (`FIRST_IDS_ARG`);
a client of the server has no tokenizer, so it sends the option words (`FIRST_OPTIONS_ARG`, in
`vllm_xargs`) and the processor finds their ids after the prompt's end (`first_ids_after`), the
in-process rule. The engine loads `FirstOptions` by name (`FIRST_OPTIONS_PROCESSOR`); the class is
built on first access, so this module imports where vllm is not installed.
"""
from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any, Sequence

from ..options import single_token_ids

log = logging.getLogger("vlmjudge.vllm")

#: The per-request arguments (`SamplingParams.extra_args`) the processor reads: token ids, or words.
FIRST_IDS_ARG = "vlmjudge_first_ids"
FIRST_OPTIONS_ARG = "vlmjudge_first_options"
#: What `--logits-processors` / `LLM(logits_processors=...)` name.
FIRST_OPTIONS_PROCESSOR = "vlmjudge.backends.vllm_first_options:FirstOptions"
#: Characters of the prompt's end re-tokenised to find which token an option is (as transformers).
TAIL_CHARS = 48


def __getattr__(name: str) -> Any:
    if name == "FirstOptions":
        return _first_options_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def first_ids_after(tokenizer: Any, prompt_ids: Sequence[int], options: Sequence[str]) -> list[int]:
    """The token id each option is as the next word after a prompt given as token ids: the last
    `TAIL_CHARS` characters of its decoded end, read as the in-process backend reads its prompt text."""
    tail = tokenizer.decode(list(prompt_ids[-TAIL_CHARS:]), skip_special_tokens=False)[-TAIL_CHARS:]
    return single_token_ids(tokenizer, tail, options)


def check_params(extra_args: dict[str, Any] | None) -> None:
    """A ValueError (HTTP 400 on the server) for a malformed restriction; the openai backend's
    probe sends an empty option list to learn whether a server runs this processor."""
    args = extra_args or {}
    if FIRST_IDS_ARG in args:
        ids = args[FIRST_IDS_ARG]
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) for i in ids):
            raise ValueError(f"{FIRST_IDS_ARG} must be a non-empty list of token ids, got {ids!r}")
    if FIRST_OPTIONS_ARG in args:
        words = args[FIRST_OPTIONS_ARG]
        if not isinstance(words, list) or not words or not all(isinstance(w, str) and w for w in words):
            raise ValueError(f"{FIRST_OPTIONS_ARG} must be a non-empty list of option words, got {words!r}")


def _masked(logits: Any, allowed: list[int]) -> Any:
    """`logits` with every id but `allowed` at -inf."""
    import torch
    index = torch.tensor(allowed, dtype=torch.long, device=logits.device)
    masked = torch.full_like(logits, float("-inf"))
    masked[index] = logits[index]
    return masked


@lru_cache(maxsize=1)
def _first_options_class() -> type:
    """The logits processor class, on vLLM's per-request adapter (built once, importing vllm)."""
    from vllm.v1.sample.logits_processor import AdapterLogitsProcessor

    class FirstOptions(AdapterLogitsProcessor):
        """Masks every other id at a request's first generated position; later positions pass."""

        def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool) -> None:
            super().__init__(vllm_config, device, is_pin_memory)
            self._model = vllm_config.model_config
            self._tokenizer: Any = None

        @classmethod
        def validate_params(cls, sampling_params: Any) -> None:
            """Refuse a malformed restriction at admission (vLLM answers 400)."""
            check_params(sampling_params.extra_args)

        def is_argmax_invariant(self) -> bool:
            """It changes the argmax (that is its purpose), so greedy rows must run it too."""
            return False

        def tokenizer(self) -> Any:
            """The checkpoint's tokenizer, loaded on the first request that names option words."""
            if self._tokenizer is None:
                from transformers import AutoTokenizer
                m = self._model
                self._tokenizer = AutoTokenizer.from_pretrained(
                    m.tokenizer, revision=m.tokenizer_revision, trust_remote_code=m.trust_remote_code)
            return self._tokenizer

        def new_req_logits_processor(self, params: Any):
            """A per-request mask for requests that name first ids or words, None for the rest."""
            args = params.extra_args or {}
            if args.get(FIRST_IDS_ARG):
                allowed = list(args[FIRST_IDS_ARG])

                def restrict(output_ids: list[int], logits: Any) -> Any:
                    """Only the first position is restricted."""
                    return logits if output_ids else _masked(logits, allowed)

                return restrict
            words = args.get(FIRST_OPTIONS_ARG)
            if not words:
                return None

            def restrict_words(prompt_ids: list[int], output_ids: list[int], logits: Any) -> Any:
                """The words' ids after this prompt, found at the first position, which alone is restricted."""
                if output_ids:
                    return logits
                try:
                    allowed_ids = first_ids_after(self.tokenizer(), prompt_ids, words)
                except ValueError as exc:  # never kill the engine for one request's options
                    log.warning("first options %s not enforced: %s", words, exc)
                    return logits
                return _masked(logits, allowed_ids)

            return restrict_words

    FirstOptions.__module__, FirstOptions.__qualname__ = __name__, "FirstOptions"  # found by name
    return FirstOptions
