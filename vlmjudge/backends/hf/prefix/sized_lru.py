"""A byte-budgeted, least-recently-used map: the one eviction rule of the two stores kept across
judge calls (prefix KV rows, vision-tower outputs), so both count, refuse and evict alike.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Hashable


class SizedLRU:
    """Values by key within `max_mb` megabytes, least recently used first out. A subclass says
    what a value weighs (`_size`) and may do more as one leaves (`_evict`)."""

    def __init__(self, max_mb: float, what: str) -> None:
        if max_mb < 0:
            raise ValueError(f"{what} size must be >= 0 MB, got {max_mb}")
        self.max_bytes = int(max_mb * 2**20)
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def bytes(self) -> int:
        """Bytes the kept values hold."""
        return self._bytes

    def _size(self, value: Any) -> int:
        """Bytes one value holds (what the budget counts)."""
        raise NotImplementedError

    def _fits(self, size: int) -> bool:
        """Whether a value of `size` bytes may be kept at all (one over the whole budget is not)."""
        return size <= self.max_bytes

    def _add(self, key: Hashable, value: Any, size: int) -> None:
        """Keep `value` as the most recent, without evicting (`_shrink` does)."""
        self._items[key] = value
        self._bytes += size

    def _touch(self, key: Hashable) -> Any:
        """Mark `key` most recently used; its value."""
        self._items.move_to_end(key)
        return self._items[key]

    def _shrink(self) -> None:
        """Evict least recently used values until the kept ones fit the budget."""
        while self._bytes > self.max_bytes and self._items:
            self._evict(next(iter(self._items)))

    def _evict(self, key: Hashable) -> Any:
        """Drop `key` (a missing key is no error: an ancestor's eviction may have taken it); its value."""
        value = self._items.pop(key, None)
        if value is not None:
            self._bytes -= self._size(value)
        return value

    def _empty(self) -> None:
        """Drop every value at once, counting no evictions."""
        self._items.clear()
        self._bytes = 0
