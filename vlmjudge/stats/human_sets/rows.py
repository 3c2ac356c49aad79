"""The pieces every human-set reader shares: opening the file and checking scores, plus
turning rows into the arrays `vlmjudge.stats.human_agreement` takes."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np


def locate(path, default_name: str) -> Path:
    """The set's file: `path` itself, or `default_name` inside it when `path` is a folder."""
    where = Path(path)
    if where.is_dir():
        where = where / default_name
    if not where.is_file():
        raise FileNotFoundError(f"no {default_name} at {where}: download the set's annotation "
                                "file first and pass its path")
    return where


def load_json(path: Path):
    """Parsed JSON, or a ValueError naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error


def rater_scores(values, where: str) -> list[float]:
    """Per-rater scores as finite floats; a missing or non-numeric score is an error at `where`."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{where}: expected a non-empty list of rater scores, got {values!r}")
    scores = []
    for value in values:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value):
            raise ValueError(f"{where}: rater score {value!r} is not a finite number")
        scores.append(float(value))
    return scores


def field(record: dict, key: str, where: str):
    """`record[key]`, or a KeyError saying which record lacks it."""
    if not isinstance(record, dict) or key not in record:
        raise KeyError(f"{where}: no {key!r} field")
    return record[key]


def human_scores(rows: list[dict]) -> np.ndarray:
    """The `human` column, ready for `agreement(metric, human)`.

    >>> human_scores([{"human": 4.0}, {"human": 2.5}]).tolist()
    [4.0, 2.5]
    """
    return np.array([row["human"] for row in rows], dtype=float)


def rater_table(rows: list[dict]) -> np.ndarray:
    """Items x raters with NaN where a row has fewer raters, ready for `inter_annotator`.

    Raters are matched by position, as the sets store them; a row without `raters` is an error.

    >>> rater_table([{"raters": [1.0, 2.0]}, {"raters": [3.0]}]).tolist()
    [[1.0, 2.0], [3.0, nan]]
    """
    missing = [row.get("id", i) for i, row in enumerate(rows) if not row.get("raters")]
    if missing:
        raise ValueError(f"rows without per-rater scores: {missing[:5]}")
    width = max(len(row["raters"]) for row in rows)
    table = np.full((len(rows), width), np.nan)
    for i, row in enumerate(rows):
        table[i, :len(row["raters"])] = row["raters"]
    return table
