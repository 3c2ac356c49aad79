"""Decoding without copying the whole KV cache at every step.

transformers' `DynamicLayer.update` concatenates each new token's keys and values onto the
cache: a copy of every row's whole prefix, per layer, per generated token. During a shared-
prefix decode (`PrefixRunner.decode`) that copy costs more than the attention itself. A
`GrowingLayer` holds the same keys and values in a buffer with spare columns and writes each
new token into the next free column; `keys` and `values` are views of the filled part, so
attention reads exactly the numbers the concatenated cache would hold.

Only plain full-attention layers (`type(layer) is DynamicLayer`) are adopted: sliding-window,
chunked and recurrent layers keep their own update rules.
"""
from __future__ import annotations

from typing import Any

from transformers.cache_utils import DynamicLayer


class GrowingLayer(DynamicLayer):
    """A `DynamicLayer` whose update writes into spare columns (grown by doubling when full)."""

    _keys_buffer: Any
    _values_buffer: Any
    _filled: int

    @classmethod
    def adopt(cls, layer: DynamicLayer, spare: int) -> None:
        """Turn an initialised `DynamicLayer` into a growing one with `spare` free columns."""
        filled = int(layer.keys.shape[-2])
        layer.__class__ = cls
        layer._keys_buffer = _with_room(layer.keys, filled, filled + spare)
        layer._values_buffer = _with_room(layer.values, filled, filled + spare)
        layer._filled = filled
        layer._expose()

    def _expose(self) -> None:
        self.keys = self._keys_buffer[..., :self._filled, :]
        self.values = self._values_buffer[..., :self._filled, :]

    def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        new = int(key_states.shape[-2])
        room = int(self._keys_buffer.shape[-2])
        if self._filled + new > room:
            room = max(2 * room, self._filled + new)
            self._keys_buffer = _with_room(self._keys_buffer, self._filled, room)
            self._values_buffer = _with_room(self._values_buffer, self._filled, room)
        self._keys_buffer[..., self._filled:self._filled + new, :] = key_states
        self._values_buffer[..., self._filled:self._filled + new, :] = value_states
        self._filled += new
        self._expose()
        return self.keys, self.values

    def batch_select_indices(self, indices: Any) -> None:
        self._keys_buffer = self._keys_buffer[indices, ...]
        self._values_buffer = self._values_buffer[indices, ...]
        self._expose()

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError("crop takes a negative number of tokens to remove")
        self._filled = max(0, self._filled + tokens_to_remove)
        self._expose()

    def reset(self) -> None:
        """Empty, as a reset plain layer is; the buffer is kept for the next tokens."""
        self._filled = 0
        self._expose()

    def offload(self) -> None:
        raise NotImplementedError("a growing decode layer stays on its device")

    def prefetch(self) -> None:
        raise NotImplementedError("a growing decode layer stays on its device")

    def batch_repeat_interleave(self, repeats: int) -> None:
        raise NotImplementedError("a growing decode layer is not repeated; repeat before adopting it")

    def reorder_cache(self, beam_idx: Any) -> None:
        raise NotImplementedError("a growing decode layer does not reorder for beam search")


def _with_room(tensor: Any, filled: int, room: int) -> Any:
    """A buffer of `room` columns whose first `filled` hold `tensor`'s first `filled` columns."""
    buffer = tensor.new_empty((*tensor.shape[:-2], room, tensor.shape[-1]))
    buffer[..., :filled, :] = tensor[..., :filled, :]
    return buffer


def adopt_growing(cache: Any, spare: int) -> int:
    """Adopt every plain full-attention layer of `cache` (see module doc); returns how many."""
    adopted = 0
    for layer in getattr(cache, "layers", ()):
        if type(layer) is DynamicLayer and layer.is_initialized and layer.keys is not None and layer.keys.numel():
            GrowingLayer.adopt(layer, spare)
            adopted += 1
    return adopted
