"""EvalMuse-40K alignment ratings (Han et al. 2024): several raters score each image 1-5.

The annotated split is `train_list.json`, a list of records with `prompt_id`, `prompt`,
`img_path` and `total_score` (one overall score per rater); `element_score` maps each element
to its raters' scores, as a JSON object (what the authors' loader takes) or as that object
written into a string (a Python dict literal in the published file, or JSON text). The test split
ships without scores, so reading it is an error rather than a set of empty rows.
"""
from __future__ import annotations

import ast
import json

from vlmjudge.stats.human_sets.rows import field, load_json, locate, rater_scores


def _parsed_elements(text: str, where: str):
    """An element_score string read as JSON text, else as a Python literal (the published form)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as error:
        raise ValueError(f"{where}: element_score is neither JSON nor a dict literal: {error}") from None


def _elements(value, where: str) -> dict[str, float]:
    """Per-element mean scores from a mapping of rater lists, or that mapping written as a string.

    >>> _elements({"cat": [1, 0]}, "r") == _elements("{'cat': [1, 0]}", "r") == _elements('{"cat": [1, 0]}', "r")
    True
    """
    if isinstance(value, str):
        value = _parsed_elements(value, where)
    if not isinstance(value, dict):
        raise ValueError(f"{where}: element_score should map elements to their raters' scores, "
                         f"got {type(value).__name__}")
    means = {}
    for name, scores in value.items():
        scores = rater_scores(scores, f"{where}, element {name!r}")
        means[name] = sum(scores) / len(scores)
    return means


def read_evalmuse(path) -> list[dict]:
    """Rows from EvalMuse's `train_list.json` (the file, or the folder holding it).

    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> record = {"prompt_id": "7", "prompt": "two cats", "img_path": "images/7_a.png",
    ...           "total_score": [4, 5, 3], "element_score": "{'cats': [1, 1, 0]}"}
    >>> _ = (folder / "train_list.json").write_text(json.dumps([record]))
    >>> row = read_evalmuse(folder)[0]
    >>> row["id"], row["human"], round(row["elements"]["cats"], 2)
    ('images/7_a.png', 4.0, 0.67)
    """
    source = locate(path, "train_list.json")
    data = load_json(source)
    if not isinstance(data, list):
        raise ValueError(f"{source}: expected a list of records, got {type(data).__name__}")
    rows = []
    for number, record in enumerate(data):
        where = f"{source.name} record {number}"
        image = field(record, "img_path", where)
        if "total_score" not in record:
            raise ValueError(f"{where} ({image}): no total_score; EvalMuse's test split has no "
                             "human scores, use train_list.json")
        raters = rater_scores(record["total_score"], f"{where} ({image})")
        row = {"id": image, "prompt": field(record, "prompt", where), "image": image,
               "human": sum(raters) / len(raters), "raters": raters,
               "prompt_id": str(field(record, "prompt_id", where))}
        if record.get("element_score"):
            row["elements"] = _elements(record["element_score"], f"{where} ({image})")
        rows.append(row)
    return rows
