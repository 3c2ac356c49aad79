"""Human labels as the annotation app writes them: one JSON line per label, read into rows.

A line is `{"id", "human": <number>}`, or per annotator `{"id", "annotator", "method", ...}` with
the method's own label fields, which the method's `HumanProtocol.rate` turns into a number. A
later line for the same item and annotator replaces an earlier one (a relabel). Rows take the
shape of the public sets' rows: `id`, `human` (the annotators' mean; None when every label was
not applicable), `raters` (annotator -> number) and `labels` (the lines, for the method's tables).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from vlmjudge.stats.human_sets.protocol import GENERIC, HumanProtocol, number
from vlmjudge.stats.human_sets.rows import rater_table


def label_method(lines: list[dict[str, Any]]) -> str | None:
    """The method the labels were made for (their `method` field), or None when they name none.

    >>> label_method([{"id": "a", "method": "fager"}, {"id": "b", "method": "fager"}])
    'fager'
    """
    named = {str(line["method"]) for line in lines if line.get("method")}
    if len(named) > 1:
        raise ValueError(f"the labels mix methods {sorted(named)}: give one method's labels")
    return named.pop() if named else None


def label_rows(lines: list[dict[str, Any]], protocol: HumanProtocol = GENERIC,
               where: str = "labels") -> list[dict[str, Any]]:
    """Rows from label lines, one per item in order of first appearance.

    >>> rows = label_rows([{"id": "a", "annotator": "x", "human": 4},
    ...                    {"id": "a", "annotator": "y", "human": 2}, {"id": "b", "human": 5}])
    >>> [(row["id"], row["human"], row["raters"]) for row in rows]
    [('a', 3.0, {'x': 4.0, 'y': 2.0}), ('b', 5.0, {'': 5.0})]
    """
    items: dict[str, dict[str, Any]] = {}
    for line_no, line in enumerate(lines, start=1):
        if not isinstance(line, dict) or line.get("id") is None:
            raise ValueError(f"{where} line {line_no}: a label needs an 'id'")
        annotator = str(line.get("annotator") or "")
        try:
            value = number(line["human"]) if "human" in line else protocol.rate(line)
        except (KeyError, TypeError, ValueError) as error:
            problem = " ".join(str(error).split())  # one line, whatever the protocol raised
            raise ValueError(f"{where} line {line_no} (id {line['id']!r}): {problem}") from None
        if "human" in line and value is None:
            raise ValueError(f"{where} line {line_no} (id {line['id']!r}): 'human' is not a "
                             f"finite number: {line['human']!r}")
        item = items.setdefault(str(line["id"]), {"raters": {}, "labels": {}})
        item["raters"][annotator] = value
        item["labels"][annotator] = line
    rows = []
    for item_id, item in items.items():
        given = {name: value for name, value in item["raters"].items() if value is not None}
        rows.append({"id": item_id, "human": (sum(given.values()) / len(given)) if given else None,
                     "raters": given, "labels": list(item["labels"].values())})
    return rows


def annotator_table(rows: list[dict[str, Any]]) -> np.ndarray:
    """Items x annotators (NaN where one did not label an item), for `inter_annotator`.

    Named raters (a mapping) line up by name; the public sets' rater lists by position.

    >>> annotator_table([{"raters": {"x": 1, "y": 2}}, {"raters": {"y": 3}}]).tolist()
    [[1.0, 2.0], [nan, 3.0]]
    """
    if not rows or not all(isinstance(row.get("raters"), dict) for row in rows):
        return rater_table(rows)
    names = sorted({name for row in rows for name in row["raters"]})
    table = np.full((len(rows), len(names)), np.nan)
    for i, row in enumerate(rows):
        for name, value in row["raters"].items():
            table[i, names.index(name)] = value
    return table
