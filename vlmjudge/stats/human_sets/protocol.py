"""How a method's human labels become numbers matched to its records (`MethodSpec.human`).

Each paper checks its judge against people its own way (TerraVis: ratings and violation marks,
VIEScore2: PQ/SC and defect grids, FAGER: A/B choices, Regeneration: similarity ratings), so a
method declares a `HumanProtocol` and the core's `vlmjudge agreement` command stays method-blind.
`GENERIC` is the protocol of any run whose labels are a bare number and whose records carry an
id and a score.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

Record = Mapping[str, Any]


def number(value: Any) -> float | None:
    """A finite float, or None for anything else (a missing or N/A value).

    >>> number(3), number("3"), number(float("nan")), number(True)
    (3.0, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def generic_record_id(record: Record) -> str | None:
    """A record's `id` (the shared record layout, `vlmjudge.record_schema`), as text."""
    return None if record.get("id") is None else str(record["id"])


def generic_metric(record: Record) -> float | None:
    """A record's finite `score` (None: it was not scored)."""
    return number(record.get("score"))


def generic_rate(label: Record) -> float | None:
    """One annotator's number from the generic form: its `human` field."""
    return number(label.get("human"))


def single_source(row: Record) -> tuple[str, ...]:
    """The records one human item needs: the record with the item's own id."""
    return (str(row["id"]),)


def only_value(values: Sequence[float]) -> float:
    """The judge's value for an item judged from one record: that record's metric."""
    return values[0]


def no_details(rows: Sequence[Record], records: Mapping[str, Record]) -> dict[str, Any]:
    """A protocol with nothing beyond the correlations adds no tables or measures."""
    return {}


@dataclass(frozen=True)
class HumanProtocol:
    """A method's human protocol: how labels are rated and which records they are judged against.

    `rate(label)` is one annotator's number for one item from a label line (None: not applicable,
    left out); a line's numeric `human` field, when present, is used instead. `record_id` and
    `metric` read a record's id and score. `sources(row)` names the records an item is judged
    from (one record, or FAGER's two images of a pair) and `combine` turns their metrics into the
    judge's value. `details(rows, records)` adds the method's own tables and measures: a dict with
    `tables` (each `title`, `header`, `rows`) and `measures` (name -> number or None).
    """

    rate: Callable[[Record], float | None] = generic_rate
    record_id: Callable[[Record], str | None] = generic_record_id
    metric: Callable[[Record], float | None] = generic_metric
    sources: Callable[[Record], tuple[str, ...]] = single_source
    combine: Callable[[Sequence[float]], float] = only_value
    details: Callable[[Sequence[Record], Mapping[str, Record]], dict[str, Any]] = no_details
    human_axis: str = "human score"
    judge_axis: str = "judge score"


GENERIC = HumanProtocol()


def confusion_table(title: str, judge: Sequence[str], human: Sequence[str], labels: Sequence[str],
                    human_labels: Sequence[str] | None = None) -> dict[str, Any]:
    """A confusion table of categorical labels: a row per judge label, a column per people's label
    (`human_labels` when people choose among fewer labels than the judge can give).

    >>> table = confusion_table("A/B", ["A", "B", "A"], ["A", "A", "A"], ("A", "B"))
    >>> table["header"], table["rows"]
    (['judge \\\\ people', 'A', 'B'], [['A', 2, 0], ['B', 1, 0]])
    """
    columns = labels if human_labels is None else human_labels
    counts = {(j, h): 0 for j in labels for h in columns}
    for j, h in zip(judge, human, strict=True):
        counts[j, h] += 1
    return {"title": title, "header": ["judge \\ people", *columns],
            "rows": [[j, *(counts[j, h] for h in columns)] for j in labels]}


def share(numerator: int, denominator: int) -> float | None:
    """numerator / denominator, or None when nothing was counted."""
    return numerator / denominator if denominator else None


def majority(votes: Sequence[bool]) -> bool:
    """Whether at least half the annotators said yes (a tie counts as yes, as one vote does)."""
    return 2 * sum(bool(v) for v in votes) >= len(votes) > 0
