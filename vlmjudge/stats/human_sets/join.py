"""Matching a judge's records to human rows by id, keeping count of everything left out.

Agreement is only as honest as its join: an item people labelled that the judge never scored,
a record nobody labelled, an image the judge could not score and one people called N/A are each
listed apart, so a high correlation on a quiet subset cannot pass for agreement on the whole set.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from vlmjudge.stats.human_sets.protocol import HumanProtocol


@dataclass
class Joined:
    """One run joined to the human rows: the paired values and what was left out, by id."""

    ids: list[str] = field(default_factory=list)
    judge: list[float] = field(default_factory=list)
    human: list[float] = field(default_factory=list)
    groups: list[str] | None = None
    matched_rows: list[dict[str, Any]] = field(default_factory=list)
    human_only: list[str] = field(default_factory=list)
    run_only: list[str] = field(default_factory=list)
    unscored: list[str] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)


def index_records(records: Sequence[Mapping[str, Any]], protocol: HumanProtocol,
                  where: str) -> dict[str, Mapping[str, Any]]:
    """Records by their id; a record without an id or an id given twice is an error at `where`."""
    by_id: dict[str, Mapping[str, Any]] = {}
    for number, record in enumerate(records, start=1):
        key = protocol.record_id(record)
        if key is None:
            raise ValueError(f"{where}: record {number} carries no id")
        if key in by_id:
            raise ValueError(f"{where}: id {key!r} appears twice; one record per item is needed")
        by_id[key] = record
    return by_id


def join(records: Mapping[str, Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
         protocol: HumanProtocol) -> Joined:
    """Pair each human row with the judge's value from the records its protocol names.

    >>> from vlmjudge.stats.human_sets.protocol import GENERIC
    >>> records = {"a": {"id": "a", "score": 0.5}, "b": {"id": "b", "score": None},
    ...            "c": {"id": "c", "score": 0.9}}
    >>> rows = [{"id": "a", "human": 3.0}, {"id": "b", "human": 2.0}, {"id": "d", "human": 1.0}]
    >>> joined = join(records, rows, GENERIC)
    >>> joined.ids, joined.unscored, joined.human_only, joined.run_only
    (['a'], ['b'], ['d'], ['c'])
    """
    out = Joined(groups=[] if rows and all(row.get("prompt_id") is not None for row in rows) else None)
    used: set[str] = set()
    for row in rows:
        sources = protocol.sources(row)
        missing = [key for key in sources if key not in records]
        used.update(key for key in sources if key in records)
        if missing:
            out.human_only.append(str(row["id"]))
            continue
        out.matched_rows.append(dict(row))
        values = [protocol.metric(records[key]) for key in sources]
        if any(value is None for value in values):
            out.unscored.append(str(row["id"]))
        elif row.get("human") is None:
            out.not_applicable.append(str(row["id"]))
        else:
            out.ids.append(str(row["id"]))
            out.judge.append(float(protocol.combine(values)))
            out.human.append(float(row["human"]))
            if out.groups is not None:
                out.groups.append(str(row["prompt_id"]))
    out.run_only = [key for key in records if key not in used]
    return out
