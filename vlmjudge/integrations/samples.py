"""Sample images for fixed prompts, score them with a panel, and hand the results to loggers.

Shared by the Lightning and Trainer callbacks and the accelerate-loop function, so each
face only decides *when* to score and *where* its logger puts scalars and images.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from vlmjudge.images import to_pil_list
from vlmjudge.integrations.grid import caption_grid, captions_and_images
from vlmjudge.integrations.panel import JudgePanel
from vlmjudge.outputs import write_jsonl


@dataclass
class ScoredSamples:
    """Prompts, their images, each method's records and the scalars to log."""

    prompts: list[str]
    images: list[Image.Image]
    records: dict[str, list[Any]]
    scalars: dict[str, float]

    def grids(self, panel: JudgePanel, **grid_options: Any) -> dict[str, Image.Image]:
        """One captioned grid per method label."""
        out = {}
        for label, recs in self.records.items():
            captions, shown = captions_and_images(panel.spec(label), recs, self.images, self.prompts)
            out[label] = caption_grid(shown, captions, **grid_options)
        return out

    def rows(self, panel: JudgePanel) -> list[dict[str, Any]]:
        """JSON rows: prompt, then per method its score, [0, 1] score and record."""
        rows = [{"prompt": p} for p in self.prompts]
        for label, recs in self.records.items():
            for row, rec, unit in zip(rows, recs, panel.unit_scores(label, recs)):
                row[label] = {"score": rec.score, "normalized": unit, "record": rec.to_json()}
        return rows

    def save(self, panel: JudgePanel, folder: str | os.PathLike) -> list[str]:
        """Write `<label>.png` grids and `samples.jsonl` into `folder`; the paths written."""
        os.makedirs(folder, exist_ok=True)
        paths = []
        for label, grid in self.grids(panel).items():
            path = os.path.join(folder, f"{label}.png")
            grid.save(path)
            paths.append(path)
        path = os.path.join(folder, "samples.jsonl")
        write_jsonl(path, self.rows(panel))  # the one JSONL writer (vlmjudge.outputs)
        return paths + [path]


def check_inputs(prompts: Sequence[str], inputs: Mapping[str, Sequence[Any]] | None) -> dict[str, list[Any]]:
    """Fixed per-prompt columns (a reference image per prompt, ...), checked against the prompts."""
    if isinstance(prompts, str) or not prompts:
        raise ValueError("prompts must be a non-empty list of strings")
    out = {k: list(v) for k, v in (inputs or {}).items()}
    for k, v in out.items():
        if len(v) != len(prompts):
            raise ValueError(f"input column {k!r} has {len(v)} values for {len(prompts)} prompts")
    return out


def sample_images(sample_fn: Callable[[Any, list[str]], Any], model: Any, prompts: Sequence[str]) -> list[Image.Image]:
    """`sample_fn(model, prompts)` as RGB PIL images, one per prompt, without gradients."""
    import torch

    with torch.no_grad():
        images = to_pil_list(sample_fn(model, list(prompts)))
    if len(images) != len(prompts):
        raise ValueError(f"sample_fn gave {len(images)} images for {len(prompts)} prompts")
    return images


def score_samples(panel: JudgePanel, images: Any, prompts: Sequence[str],
                  inputs: Mapping[str, Sequence[Any]] | None = None) -> ScoredSamples:
    """Score images (one per prompt) under every method of the panel."""
    pictures = to_pil_list(images)
    records = panel.score(pictures, list(prompts), **dict(inputs or {}))
    return ScoredSamples(list(prompts), pictures, records, panel.summarize(records))


def send_image(logger: Any, tag: str, image: Image.Image, step: int, caption: str = "") -> bool:
    """Log an image where the logger can take one: a WandB-style `log_image`, or a TensorBoard-style
    `add_image` on the logger, its `experiment` or its `writer`. False when it cannot (CSV)."""
    log_image = getattr(logger, "log_image", None)
    if callable(log_image):
        log_image(key=tag, images=[image], step=step, caption=[caption])
        return True
    for owner in (logger, getattr(logger, "experiment", None), getattr(logger, "writer", None),
                  getattr(logger, "tb_writer", None)):
        add_image = getattr(owner, "add_image", None)
        if callable(add_image):
            import numpy as np

            add_image(tag, np.asarray(image.convert("RGB")), step, dataformats="HWC")
            return True
    return False
