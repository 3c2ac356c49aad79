"""The `first_options` restriction inside vLLM's engine: the first answer token is one of the ids
a request names (`SamplingParams.extra_args["vlmjudge_first_ids"]`), so constrained greedy decoding
starts with the option `choice_probs` ranks first, as on the transformers backend. The engine loads
`FirstOptions` by name, in its own process; the class is built on that first access, so this module
imports (for layout and doctest sweeps) where vllm is not installed.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

#: Must equal `vlmjudge.backends.vllm.FIRST_IDS_ARG` (not imported: this module stays engine-side).
FIRST_IDS_ARG = "vlmjudge_first_ids"


def __getattr__(name: str) -> Any:
    if name == "FirstOptions":
        return _first_options_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@lru_cache(maxsize=1)
def _first_options_class() -> type:
    """The logits processor class, on vLLM's per-request adapter (built once, importing vllm)."""
    import torch
    from vllm.v1.sample.logits_processor import AdapterLogitsProcessor

    class FirstOptions(AdapterLogitsProcessor):
        """Masks every other id at a request's first generated position; later positions pass."""

        def is_argmax_invariant(self) -> bool:
            """It changes the argmax (that is its purpose), so greedy rows must run it too."""
            return False

        def new_req_logits_processor(self, params: Any):
            """A per-request mask for requests that name first ids, None for the rest."""
            ids = (params.extra_args or {}).get(FIRST_IDS_ARG)
            if not ids:
                return None
            allowed = torch.tensor(list(ids), dtype=torch.long)

            def restrict(output_ids: list[int], logits: torch.Tensor) -> torch.Tensor:
                """Only the first position is restricted."""
                if output_ids:
                    return logits
                masked = torch.full_like(logits, float("-inf"))
                masked[allowed] = logits[allowed]
                return masked

            return restrict

    FirstOptions.__module__, FirstOptions.__qualname__ = __name__, "FirstOptions"  # found by name
    return FirstOptions
