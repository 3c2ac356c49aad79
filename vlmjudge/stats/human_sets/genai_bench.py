"""GenAI-Bench image ratings (Lin et al. 2024): 1-5 Likert alignment scores from 3 raters.

The set ships `genai_image.json` (527 or 1,600 prompts), a mapping from a prompt id such as
"00012" to a record with `prompt` and `models`, each generator's name mapping to the raters'
scores; the images sit at `<generator>/<prompt id>.jpeg` beside it. One row per (prompt,
generator) the file rates, as the authors' loader reads it: a prompt gives rows only for the
generators its `models` names (some or none of them), never one per generator of the set.
"""
from __future__ import annotations

from vlmjudge.stats.human_sets.rows import field, load_json, locate, rater_scores


def read_genai_bench(path) -> list[dict]:
    """Rows from GenAI-Bench's `genai_image.json` (the file, or the folder holding it).

    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> record = {"prompt": "a red cube on a blue sphere", "models": {"DALLE_3": [5, 4, 3]}}
    >>> _ = (folder / "genai_image.json").write_text(json.dumps({"00000": record}))
    >>> row = read_genai_bench(folder)[0]
    >>> row["id"], row["image"], row["raters"], row["human"]
    ('00000/DALLE_3', 'DALLE_3/00000.jpeg', [5.0, 4.0, 3.0], 4.0)
    """
    source = locate(path, "genai_image.json")
    data = load_json(source)
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected an object keyed by prompt id, "
                         f"got {type(data).__name__}")
    rows = []
    for prompt_id, record in data.items():
        where = f"{source.name} prompt {prompt_id}"
        prompt = field(record, "prompt", where)
        models = field(record, "models", where)
        if not isinstance(models, dict):
            raise ValueError(f"{where}: 'models' should map each generator to its ratings, got {type(models).__name__}")
        for system, scores in models.items():
            raters = rater_scores(scores, f"{where}, generator {system}")
            rows.append({"id": f"{prompt_id}/{system}", "prompt": prompt,
                         "image": f"{system}/{prompt_id}.jpeg", "human": sum(raters) / len(raters),
                         "raters": raters, "system": system, "prompt_id": prompt_id})
    if not rows:
        raise ValueError(f"{source}: no prompt rates any generator ('models' is empty throughout); "
                         "this is a prompt list, not GenAI-Bench's ratings")
    return rows
