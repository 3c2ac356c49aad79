"""Prefix KV rows kept across judge calls, so a later prompt that starts with a kept prefix (same
images by pixel digest, same token ids) runs only its new tokens and no vision tower.

An entry is one unit prefix's KV row (`RowKV`), keyed by digests and tokenizer ids, with its
length in cache columns and its next position; a request's whole prompt is kept as a child of
its unit's prefix (its own columns only). Cuts stay inside the verbatim tail, where processor
and tokenizer ids agree; a sliding layer's entry is reused only at its end when longer than the
window. Least recently used first out within `kv_cache_mb`; lookups (prefetch thread) and
stores (main thread) share a lock. docs/performance.md has the API and the reasons.
"""
from __future__ import annotations

import array
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .cache_layers import cache_layers
from .sized_lru import SizedLRU

if TYPE_CHECKING:
    import torch

#: Default byte budget of the store in MiB (0 turns it off): about 25 Qwen3-VL-8B image prefixes at 1024².
DEFAULT_MB = 4096
#: Text-only entries are found by their first tokens: a shorter shared text saves too little to look for.
TEXT_KEY_TOKENS = 32


@dataclass
class RowKV:
    """One prefix's cache row. A full-attention layer holds (keys, values) of shape (1, heads, n,
    dim) for the columns after `parent` (a request's prompt kept after its unit prefix stores
    only its own tokens there); a sliding layer (`sliding[i]`) holds the row's last min(length,
    W-1) columns itself. None: a layer the model leaves empty."""

    layers: list[tuple[torch.Tensor, torch.Tensor] | None]
    length: int   # real columns, image placeholders expanded, parent's included
    next: int     # the position of the next token
    sliding: tuple[bool, ...] = ()
    parent: RowKV | None = None

    @property
    def base(self) -> int:
        return self.parent.length if self.parent is not None else 0

    @property
    def nbytes(self) -> int:
        """Bytes of this row's own tensors (a parent counts as its own entry)."""
        return sum(t.numel() * t.element_size() for kv in self.layers if kv is not None for t in kv)

    def _is_sliding(self, i: int) -> bool:
        return bool(self.sliding) and self.sliding[i]

    @cached_property
    def whole(self) -> bool:
        """Whether every column is held (no sliding window dropped any), so the row can be cut."""
        own = all(kv is None or int(kv[0].shape[-2]) == (self.length if self._is_sliding(i) else self.length - self.base)
                  for i, kv in enumerate(self.layers))
        return own and (self.parent is None or self.parent.whole)

    def segments(self, i: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Layer i's (keys, values) pieces, oldest first: the parent chain's, then this row's."""
        kv = self.layers[i]
        if kv is None:
            return []
        if self._is_sliding(i) or self.parent is None:
            return [kv]
        return self.parent.segments(i) + [kv]

    def crop(self, columns: int) -> RowKV:
        if columns == self.length:
            return self
        if not 0 < columns < self.length or not self.whole:
            raise ValueError(f"cannot cut a {self.length}-column prefix to {columns} columns")
        if columns <= self.base:
            return self.parent.crop(columns)  # type: ignore[union-attr]
        keep = [None if kv is None else
                (kv[0][..., :columns - (0 if self._is_sliding(i) else self.base), :],
                 kv[1][..., :columns - (0 if self._is_sliding(i) else self.base), :])
                for i, kv in enumerate(self.layers)]
        return RowKV(keep, columns, self.next - (self.length - columns), self.sliding, self.parent)


@dataclass
class Entry:
    """A stored prefix: what it is (digests, ids) and where it may be cut (verbatim, clean_edge);
    `parent` is the key of the entry its row extends, `children` the keys of those extending it."""

    digests: tuple[str, ...]
    ids: tuple[int, ...]      # tokenizer ids, image placeholders unexpanded
    kv: RowKV
    verbatim: int             # trailing tokens equal in the expanded and the tokenizer ids
    clean_edge: bool          # a special token precedes the verbatim tail (or nothing does)
    parent: tuple | None = None
    children: list = field(default_factory=list)

    @property
    def key(self) -> tuple:
        return (self.digests, self.ids)

    @cached_property
    def packed(self) -> bytes:
        return packed_ids(self.ids)


def packed_ids(ids: Sequence[int]) -> bytes:
    """Token ids as 8-byte machine words: prefixes compare as bytes (`common_length`)."""
    return array.array("q", ids).tobytes()


def common_length(a: bytes, b: bytes) -> int:
    """Tokens two `packed_ids` share at their start. A lookup compares its prompt with every
    entry of its bucket, so the words are compared as arrays, in one vectorised pass (a few
    microseconds for thousands of tokens), not token by token in Python."""
    n = min(len(a), len(b)) // 8
    if n == 0:
        return 0
    differs = np.frombuffer(a, np.int64, n) != np.frombuffer(b, np.int64, n)
    first = int(differs.argmax())
    return first if differs[first] else n


def verbatim_tail(expanded: Sequence[int], ids: Sequence[int], limit: int) -> int:
    """How many trailing tokens `expanded` (the processor's) and `ids` (the tokenizer's) share, at most `limit`."""
    n = 0
    while n < min(limit, len(expanded), len(ids)) and expanded[-1 - n] == ids[-1 - n]:
        n += 1
    return n


def supports(model: Any) -> bool:
    """Whether every cache layer of the model is a plain or a sliding-window KV layer (the only
    ones whose rows this store cuts and rebuilds; DSA indexers and recurrent states are not)."""
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer
    layers = cache_layers(model)
    return bool(layers) and all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) for layer in layers)


class PrefixKVStore(SizedLRU):
    """Prefix KV rows of one model by (image digests, token ids), within `max_mb` megabytes."""

    def __init__(self, model: Any, max_mb: float = DEFAULT_MB, stats: Any = None,
                 special_ids: Sequence[int] = ()) -> None:
        super().__init__(max_mb, "prefix KV cache")
        self.enabled = max_mb > 0 and supports(model)
        self.stats = stats               # the judge's stats: hits, skipped tokens, evictions
        self.special = frozenset(special_ids)
        self._buckets: dict[tuple, dict[tuple, Entry]] = {}
        self._lock = threading.Lock()

    def _size(self, entry: Entry) -> int:
        """An entry weighs its row's own tensors (a parent is an entry of its own)."""
        return entry.kv.nbytes

    @staticmethod
    def _bucket(digests: tuple, ids: Sequence[int]) -> tuple | None:
        if digests:
            return digests
        return ("text", tuple(ids[:TEXT_KEY_TOKENS])) if len(ids) >= TEXT_KEY_TOKENS else None

    def lookup(self, digests: tuple, ids: Sequence[int], images_end: int,
               touch: bool = True) -> tuple[Entry, int] | None:
        """The stored entry covering the longest start of `ids` (a unit's prefix ids) with every
        image inside it, and how many of `ids` it covers; None when none is usable. `touch`:
        mark it used (False: a planner's question, which changes no eviction order)."""
        bucket = self._bucket(digests, ids)
        if bucket is None:
            return None
        packed = packed_ids(ids)
        best: tuple[Entry, int] | None = None
        with self._lock:
            for entry in self._buckets.get(bucket, {}).values():
                cut = self._usable(entry, common_length(entry.packed, packed), images_end)
                if cut and (best is None or cut > best[1]):
                    best = (entry, cut)
            if best is not None and touch:
                self._touch_chain(best[0])
        return best

    def _touch_chain(self, entry: Entry) -> None:
        """Most recent: the entry, then its ancestors, so a parent always outlives its children."""
        while entry is not None:
            self._touch(entry.key)
            entry = self._items.get(entry.parent) if entry.parent is not None else None

    @staticmethod
    def _usable(entry: Entry, common: int, images_end: int) -> int:
        n = len(entry.ids)
        if common < max(images_end, 1) or common < n - entry.verbatim:
            return 0
        if common == n - entry.verbatim and not entry.clean_edge:
            return 0
        if common < n and not entry.kv.whole:
            return 0  # a sliding window dropped columns before the cut
        return common

    def has(self, key: tuple) -> bool:
        with self._lock:
            return key in self._items

    def put(self, entry: Entry) -> Entry | None:
        """Keep `entry` (a key already kept stays as it is; a child needs its parent kept), then
        drop the least recently used entries, each with any children, until within budget.
        Returns the entry kept under its key (None: not kept)."""
        size = self._size(entry)
        bucket = self._bucket(entry.digests, entry.ids)
        if not self._fits(size) or bucket is None:
            return None
        with self._lock:
            if entry.key in self._items:
                self._touch_chain(self._items[entry.key])
                return self._items[entry.key]
            parent = self._items.get(entry.parent) if entry.parent is not None else None
            if entry.parent is not None and parent is None:
                return None  # its parent's tensors would be held without being counted
            self._add(entry.key, entry, size)
            self._buckets.setdefault(bucket, {})[entry.key] = entry
            if parent is not None:
                parent.children.append(entry.key)
            self._touch_chain(entry)
            self._shrink()
            return self._items.get(entry.key)

    def _evict(self, key: tuple) -> Entry | None:
        """Drop an entry, counted as an eviction, and with it every entry extending it."""
        entry = super()._evict(key)
        if entry is None:
            return None
        self._buckets[self._bucket(entry.digests, entry.ids)].pop(key, None)
        if self.stats is not None:
            self.stats.prefix_cache_evictions += 1
        for child in entry.children:
            self._evict(child)
        return entry

    def clear(self) -> None:
        """Drop every entry (after an out-of-memory error), counting no evictions."""
        with self._lock:
            self._empty()
            self._buckets.clear()
