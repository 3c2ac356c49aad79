"""T2IScoreScore (Saxon et al. 2024): images ordered by how many semantic errors they carry.

The set's `metadata.csv` has columns `id` (the prompt's error graph), `target_prompt`,
`file_name`, `image_source` and `rank`, where rank is the error count with a letter naming the
branch of the graph ("0", "1a", "2b"). There are no raters: `human` is minus the error count, so
higher is better as in the other sets (0.0 for none, never -0.0), and `errors` keeps the count.
The set is meant to be judged within each graph: pass `prompt_id` as groups, and see
`error_graphs` for the authors' own per-graph statistics.
"""
from __future__ import annotations

import csv
import re

from vlmjudge.stats.human_sets.rows import locate

COLUMNS = ("id", "target_prompt", "file_name", "image_source", "rank")


def read_t2iscorescore(path) -> list[dict]:
    """Rows from T2IScoreScore's `metadata.csv` (the file, or the folder holding it).

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "metadata.csv").write_text("id,target_prompt,file_name,image_source,rank\\n"
    ...                                          "0,a kite,images/000-01.jpg,SD2.0,2b\\n")
    >>> row = read_t2iscorescore(folder)[0]
    >>> row["image"], row["errors"], row["branch"], row["human"]
    ('images/000-01.jpg', 2, 'b', -2.0)
    >>> _ = (folder / "metadata.csv").write_text("id,target_prompt,file_name,image_source,rank\\n"
    ...                                          "0,a kite,images/000-00.jpg,SD2.0,0\\n")
    >>> str(read_t2iscorescore(folder)[0]["human"])
    '0.0'
    """
    source = locate(path, "metadata.csv")
    with source.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in COLUMNS if column not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{source.name}: missing columns {missing}; found {reader.fieldnames}")
        rows = []
        for line, record in enumerate(reader, start=2):
            rank = re.fullmatch(r"(\d+)([a-z]*)", record["rank"].strip())
            if rank is None:
                raise ValueError(f"{source.name} line {line}: rank {record['rank']!r} is not an "
                                 "error count with an optional branch letter")
            errors = int(rank.group(1))
            rows.append({"id": record["file_name"], "prompt": record["target_prompt"],
                         "image": record["file_name"], "human": float(-errors),
                         "errors": errors, "branch": rank.group(2),
                         "system": record["image_source"], "prompt_id": record["id"]})
    return rows
