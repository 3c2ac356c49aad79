"""What a model's KV cache layers allow: sharing a prefix at all, and padding inside it.

Its own module because the runner, shared-prefix attention and the KV store all ask it, and
none of them should import another just for this.
"""
from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


def cache_layers(model: Any) -> list[Any]:
    """The layers of a fresh `DynamicCache` for this model: their types say what each keeps."""
    from transformers import DynamicCache
    return list(getattr(DynamicCache(config=model.config), "layers", []))


def windowed(model: Any) -> bool:
    """Whether some attention layer sees a sliding window or a chunk (its cache layer keeps a
    window): suffixes then run in blocks of equal length, so no pad lies inside a window."""
    return any("Sliding" in type(layer).__name__ or "Chunk" in type(layer).__name__
               for layer in cache_layers(model))


def sharing_blocker(model: Any, model_id: str = "") -> str | None:
    """Why this model cannot share a prefix (logged), or None: a recurrent or hybrid cache
    (linear attention, state-space layers) cannot be copied per request, and padding inside
    it would run through the recurrent state."""
    for layer in cache_layers(model):
        if not callable(getattr(layer, "batch_select_indices", None)):
            reason = f"recurrent cache layer {type(layer).__name__}"
            logger.warning("%s cannot share prompt prefixes (%s); running every prompt unshared",
                           model_id or type(model).__name__, reason)
            return reason
    return None
