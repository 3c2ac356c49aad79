"""TIFA v1.0 human judgments (Hu et al. 2023): two raters score 800 images 1-5 for faithfulness.

The set's `human_annotations.json` maps an image key such as "coco_301091_vq_diffusion" to a
record with `text_id`, `image_path`, `text` and `human_scores` (one per rater); the key is the
text id followed by the generator's name, which becomes `system`.
"""
from __future__ import annotations

from vlmjudge.stats.human_sets.rows import field, load_json, locate, rater_scores


def read_tifa(path) -> list[dict]:
    """Rows from TIFA's `human_annotations.json` (the file, or the folder holding it).

    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> record = {"text_id": "coco_1", "image_path": "coco_1_vq_diffusion.jpg",
    ...           "text": "a dog on a sofa", "human_scores": [4, 5]}
    >>> annotations = {"coco_1_vq_diffusion": record}
    >>> _ = (folder / "human_annotations.json").write_text(json.dumps(annotations))
    >>> row = read_tifa(folder)[0]
    >>> row["system"], row["prompt_id"], row["human"]
    ('vq_diffusion', 'coco_1', 4.5)
    """
    source = locate(path, "human_annotations.json")
    data = load_json(source)
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected an object keyed by image, got {type(data).__name__}")
    rows = []
    for key, record in data.items():
        where = f"{source.name} image {key}"
        text_id = str(field(record, "text_id", where))
        raters = rater_scores(field(record, "human_scores", where), where)
        row = {"id": key, "prompt": field(record, "text", where),
               "image": field(record, "image_path", where), "human": sum(raters) / len(raters),
               "raters": raters, "prompt_id": text_id}
        if key.startswith(text_id + "_"):
            row["system"] = key[len(text_id) + 1:]
        rows.append(row)
    return rows
