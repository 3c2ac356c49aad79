"""The request VIEScore2 sends for each image, and how its answer is read into a record's fields.

An item is one generated image with its prompt and conditioning images; its request holds the
conditioning images first and the generated image last, the configuration's instruction, and the
output grammar (`viescore2.schema`) as its constraint. An answer is read tolerantly
(`viescore2.parsing`): the requested fields found, the ones missing (each a counted parse failure)
and a parameter-free explanation of what was read.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

from vlmjudge.images import to_pil
from vlmjudge.requests import Answer, Constraint, Decoding, Request

from .explain import explain
from .grid import CATEGORIES, DEFAULT_N, CategoryGrids, Grid, GridStatus, Localization, ParsedOutput
from .pack import Fields, FieldsLike
from .parsing import parse_output
from .records import ReadStatus


def _status_of(grid: Grid | None) -> GridStatus:
    return GridStatus.FAILED if grid is None else GridStatus.NONE if grid.is_empty else GridStatus.OK


def read_answer(answer: Answer, fields: FieldsLike, n: int = DEFAULT_N) -> dict[str, Any]:
    """The requested fields read from one answer (tolerantly), with status and missing fields.

    Unrequested fields are ignored; a single grid requested but two sections given is read as
    their union; two sections requested but one grid given is a failure (categories unknown);
    marks are dropped unless requested; a grid cut off by the token limit is a failure.
    """
    fields = Fields.parse(fields)
    requested = [*fields.score_keys, *(["grid"] if fields.grid != "none" else [])]
    if not answer.ok:
        return {"read_status": "error", "scores": {}, "localization": None, "missing": requested,
                "grid_status": GridStatus.FAILED.value if fields.grid != "none" else None, "category_status": {},
                "explanation": "The judge gave no answer for this image; it is not scored."}
    parsed = parse_output(answer.text, n=n)
    scores = {k: parsed.scores[k] for k in fields.score_keys if k in parsed.scores}
    missing = [k for k in fields.score_keys if k not in scores]
    loc: Localization | None = None
    category_status: dict[str, str] = {}
    grid_status = None
    if fields.grid != "none":
        loc = parsed.localization
        if answer.finish_reason == "length":
            loc = None
        elif fields.grid == "split" and not isinstance(loc, CategoryGrids):
            loc = None
        elif fields.grid == "single" and isinstance(loc, CategoryGrids):
            loc = loc.union()
        if loc is not None and not fields.marks:
            loc = (CategoryGrids(loc.artifact.without_marks(), loc.misalign.without_marks())
                   if isinstance(loc, CategoryGrids) else loc.without_marks())
        union = loc.union() if isinstance(loc, CategoryGrids) else loc
        grid_status = _status_of(union).value
        if fields.grid == "split":
            if isinstance(loc, CategoryGrids):
                category_status = {name: _status_of(g).value for name, g in loc.items()}
            else:
                category_status = {name: GridStatus.FAILED.value for name in CATEGORIES}
        if loc is None:
            missing.append("grid")
    read_status: ReadStatus = "ok" if not missing else "failed" if len(missing) == len(requested) else "partial"
    view = ParsedOutput(scores, loc, _status_of(loc.union() if isinstance(loc, CategoryGrids) else loc),
                        {k: GridStatus(v) for k, v in category_status.items()})
    notes = []
    if "grid" in missing and fields.grid == "single":
        notes.append("The defect grid could not be read.")
    if answer.finish_reason == "length":
        notes.append("The answer was cut off at the token limit.")
    if read_status == "failed":
        text = f"The answer could not be read: none of the requested fields ({', '.join(requested)}) was found."
    else:
        text = explain(view, n=n)
    return {"read_status": read_status, "scores": scores, "localization": loc, "missing": missing, "grid_status": grid_status,
            "category_status": category_status, "explanation": "\n".join([text, *notes]) if notes else text}


@dataclass
class Item:
    """One image to judge, with its prompt, conditioning images and id."""

    id: str
    image: Any
    prompt: str
    conditioning: list[Any]


def _conditioning_list(entry: Any, index: int) -> list[Any]:
    if entry is None:
        return []
    images = list(entry) if isinstance(entry, (list, tuple)) else [entry]
    return [to_pil(img, index=index) for img in images]


def make_items(images: Sequence[Any], prompts: Sequence[str], conditioning: Sequence[Any] | None = None,
               ids: Sequence[Any] | None = None) -> list[Item]:
    """Items from parallel columns; a conditioning entry is None, one image, or a list of images."""
    if isinstance(images, (str, bytes, os.PathLike)) or hasattr(images, "convert") or not hasattr(images, "__len__"):
        raise TypeError("images must be a sequence of images (wrap a single image in a list)")
    if isinstance(prompts, str) or not hasattr(prompts, "__len__"):
        raise TypeError("prompts must be a sequence of strings, one per image (wrap a single prompt in a list)")
    images, prompts = list(images), list(prompts)
    if not images:
        raise ValueError("no images to score")
    if len(prompts) != len(images):
        raise ValueError(f"{len(prompts)} prompts for {len(images)} images")
    bad = [i for i, p in enumerate(prompts) if not isinstance(p, str)]
    if bad:
        raise TypeError(f"prompts must be strings; item {bad[0]} is a {type(prompts[bad[0]]).__name__}")
    cond = [None] * len(images) if conditioning is None else list(conditioning)
    if len(cond) != len(images):
        raise ValueError(f"{len(cond)} conditioning entries for {len(images)} images (use None for none)")
    keys = [str(i) for i in range(len(images))] if ids is None else [str(i) for i in ids]
    if len(keys) != len(images):
        raise ValueError(f"{len(keys)} ids for {len(images)} images")
    if len(set(keys)) != len(keys):
        raise ValueError("image ids must be unique")
    return [Item(k, to_pil(img, index=i), p, _conditioning_list(c, i))
            for i, (k, img, p, c) in enumerate(zip(keys, images, prompts, cond))]


def item_request(item: Item, instruction: str, system: str | None, fields: Fields, grid_size: int,
                 decoding: Decoding, constraint: Constraint | None) -> Request:
    """One item's request: its conditioning images, then the generated image, under `instruction`;
    the meta names the item and the configuration, so a replayed answer is found by them."""
    return Request(images=[*item.conditioning, item.image], text=instruction, system=system,
                   decoding=decoding, constraint=constraint,
                   meta={"method": "viescore2", "id": item.id, "prompt": item.prompt, "fields": fields.key,
                         "grid_size": grid_size})
