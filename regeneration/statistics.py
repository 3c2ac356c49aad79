"""Regeneration's own statistics over saved pairs, for `vlmjudge compare` and `vlmjudge.stats`.

CLIP % and DINO % are means over scored pairs (failed pairs counted, not averaged in), as the
benchmark summary and the compare report give them; pairs carrying a `set` (content or style
references) are also compared within their set.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from vlmjudge.stats.statistic import ColumnMean, Statistic


@dataclass(frozen=True)
class Similarity:
    """One similarity (percent) of a pair: None when absent, NaN when the pair failed."""
    key: str

    def __call__(self, record: Mapping) -> Any:
        if record.get("status") == "failed":
            return math.nan
        value = record.get(self.key)
        return None if value is None else [float(value)]


def set_of(record: Mapping) -> Any:
    """The reference set of the pair (content or style), when the record names one."""
    return record.get("set")


STATISTICS: dict[str, Statistic] = {
    "clip": Statistic("CLIP %", Similarity("clip"), ColumnMean(0), split=set_of,
                      description="mean CLIP cosine similarity of regeneration and reference, in percent"),
    "dino": Statistic("DINO %", Similarity("dino"), ColumnMean(0), split=set_of,
                      description="mean DINOv2 cosine similarity of regeneration and reference, in percent"),
}
