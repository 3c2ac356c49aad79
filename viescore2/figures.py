"""PNG overlays of defect cells on the judged image, so a reader sees where the judge points.

Each category has its own colour; marked (high-coverage) cells are painted more opaquely
than other cells; the ground truth, when given, is drawn as an outline around its cells.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from PIL import Image

from vlmjudge.images import IMAGE_SUFFIXES
from vlmjudge.images import to_pil

from .evaluation import grid_to_mask
from .grid import CategoryGrids, Grid, Localization, union_of
from .parsing import parse_output
from .saved_runs import without_suffix

COLOURS = {"grid": (255, 140, 0), "artifact": (230, 30, 30), "misalign": (30, 90, 235)}
OUTLINE_COLOUR = (255, 255, 0)
FILL_ALPHA = 0.35
MARK_ALPHA = 0.75


def _rgb(image: Any) -> np.ndarray:
    return np.asarray(to_pil(image), dtype=np.float64)


def _erode(mask: np.ndarray) -> np.ndarray:
    padded = np.pad(mask, 1, constant_values=False)
    return (padded[1:-1, 1:-1] & padded[:-2, 1:-1] & padded[2:, 1:-1]
            & padded[1:-1, :-2] & padded[1:-1, 2:])


def outline(mask: np.ndarray, width: int) -> np.ndarray:
    """The inner boundary band, ``width`` pixels thick, of a binary mask."""
    inner = mask
    for _ in range(width):
        inner = _erode(inner)
    return mask & ~inner


def render_overlay(image: Any, localization: Localization, ground_truth: Localization | None = None,
                   fill_alpha: float = FILL_ALPHA, mark_alpha: float = MARK_ALPHA,
                   outline_width: int | None = None) -> Image.Image:
    """The image with predicted cells tinted per category and the ground-truth outline on top."""
    if not 0.0 <= fill_alpha <= 1.0 or not 0.0 <= mark_alpha <= 1.0:
        raise ValueError("alphas must lie in [0, 1]")
    out = _rgb(image)
    height, width = out.shape[:2]
    layers = localization.items() if isinstance(localization, CategoryGrids) else [("grid", localization)]
    for name, grid in layers:
        if not isinstance(grid, Grid):
            raise TypeError(f"localization must be a Grid or CategoryGrids, got {type(grid).__name__}")
        colour = np.array(COLOURS[name], dtype=np.float64)
        cells = grid_to_mask(grid, height, width)
        marks = grid_to_mask(Grid(grid.marks, grid.marks, grid.n), height, width)
        for mask, alpha in ((cells & ~marks, fill_alpha), (marks, mark_alpha)):
            out[mask] = out[mask] * (1.0 - alpha) + colour * alpha
    if ground_truth is not None:
        truth = grid_to_mask(union_of(ground_truth), height, width)
        band = outline(truth, outline_width or max(1, min(height, width) // 128))
        out[band] = OUTLINE_COLOUR
    return Image.fromarray(np.clip(np.rint(out), 0, 255).astype(np.uint8), "RGB")


def save_overlay(path: str | os.PathLike, image: Any, localization: Localization,
                 ground_truth: Localization | None = None, **kwargs: Any) -> None:
    """Write ``render_overlay`` as a PNG file."""
    render_overlay(image, localization, ground_truth, **kwargs).save(path, format="PNG")


def overlay_path(folder: Path, image_id: str) -> Path:
    """Where an image's overlay goes: its id without the image suffix, as PNG (sub/cat.jpg -> sub/cat.png)."""
    return folder / f"{without_suffix(image_id)}.png"


def _image_path(images: Path, key: str, record: dict) -> Path | None:
    """The judged image of an id: the reference line's `image`, else the id itself, else the id with an image suffix."""
    if record.get("image"):
        path = images / str(record["image"])
        return path if path.is_file() else None
    if Path(key).suffix.lower() in IMAGE_SUFFIXES and (images / key).is_file():
        return images / key
    for suffix in IMAGE_SUFFIXES:
        if (images / f"{key}{suffix}").is_file():
            return images / f"{key}{suffix}"
    return None


def draw_evaluation_overlays(folder: Path, images: Path, ids: Sequence[str], texts: Sequence[str],
                             references: Sequence[Any], reference_lines: Mapping[str, dict],
                             n: int) -> tuple[int, list[str]]:
    """The predicted cells, with the ground truth outlined, on each image found under `images` whose
    grid was read: how many were drawn, and why each other one was skipped."""
    folder.mkdir(parents=True, exist_ok=True)
    written, skipped = 0, []
    for key, text, ref in zip(ids, texts, references):
        parsed = parse_output(text, n=n)
        image = _image_path(images, key, reference_lines[key])
        if parsed.localization is None or image is None:
            reason = "no image found" if image is None else "grid not parsed"
            skipped.append(f"overlay skipped for {key!r}: {reason}")
            continue
        target = overlay_path(folder, key)
        target.parent.mkdir(parents=True, exist_ok=True)
        save_overlay(target, image, parsed.localization, ref.localization)
        written += 1
    return written, skipped


def draw_record_overlays(folder: Path, records: list) -> Path:
    """The predicted cells drawn on each image whose grid was read, one PNG per image in `folder`
    (returned, for the summary's list of what was written)."""
    folder.mkdir(parents=True, exist_ok=True)
    drawn = [r for r in records if r.localization is not None]
    for record in drawn:
        target = overlay_path(folder, record.id)
        target.parent.mkdir(parents=True, exist_ok=True)
        save_overlay(target, record.image, record.localization)
    return folder
