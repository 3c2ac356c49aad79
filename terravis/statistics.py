"""TerraVis's own statistics over saved records, for `vlmjudge compare` and `vlmjudge.stats`.

The mean score leaves N/A and failed images out, as `summarize` does; the level and type shares
are the composition of the detected violations pooled over scored images (the summary's
`level_shares` / `type_shares`), so each is a ratio of summed counts, resampled as one.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from vlmjudge.stats.statistic import ColumnMean, ColumnShare, Statistic

from .taxonomy import LEVELS, TYPE_IDS, get_type


def score_row(record: Mapping) -> Any:
    """The image's score; None when not applicable, NaN when the judge failed."""
    if record.get("status") == "failed":
        return math.nan
    return None if record.get("score") is None else [float(record["score"])]


def _detected(record: Mapping) -> list[str]:
    """Type ids of the violations detected on a scored image."""
    return [c["type_id"] for c in record.get("checks") or [] if c.get("detected")]


def _counts_by(record: Mapping, attribute: str, order: tuple) -> Any:
    """Detected violations per value of their type's `attribute`, in `order`, on a scored image;
    N/A or NaN as `score_row`: one counting rule for the level and the type shares."""
    base = score_row(record)
    if base is None or not isinstance(base, list):
        return base
    found = [getattr(get_type(t), attribute) for t in _detected(record)]
    return [found.count(value) for value in order]


def level_counts(record: Mapping) -> Any:
    """Detected violations per level (LEVELS order) on a scored image; N/A or NaN as `score_row`."""
    return _counts_by(record, "level", LEVELS)


def type_counts(record: Mapping) -> Any:
    """Detected violations per type (TYPE_IDS order) on a scored image; N/A or NaN as `score_row`."""
    return _counts_by(record, "id", TYPE_IDS)


def style_of(record: Mapping) -> Any:
    """The image's style label (photorealistic / stylized) when its metadata carries one."""
    return (record.get("meta") or {}).get("style")


STATISTICS: dict[str, Statistic] = {
    "mean_score": Statistic("mean score", score_row, ColumnMean(0), id_key="id", split=style_of,
                            description="mean S over scored images (N/A and failed left out)"),
    **{f"level_share_{level}": Statistic(f"share of violations at level {level}", level_counts,
                                         ColumnShare(k), id_key="id", higher_is_better=None,
                                         group="violation level")
       for k, level in enumerate(LEVELS)},
    **{f"type_share_{t}": Statistic(f"share of violations of type {t}", type_counts, ColumnShare(k),
                                    id_key="id", higher_is_better=None, group="violation type")
       for k, t in enumerate(TYPE_IDS)},
}
