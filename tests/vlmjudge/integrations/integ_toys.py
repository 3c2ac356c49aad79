"""Cheap registered methods without a model, so panel, reward and map logic is tested exactly."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlmjudge.images import to_pil
from vlmjudge.registry import MethodSpec


@dataclass
class Rec:
    score: float | None
    valid: bool
    note: str = ""

    def to_json(self) -> dict:
        return {"score": self.score, "valid": self.valid, "note": self.note}


class Brightness:
    """Mean pixel value 0..255; an all-black image is unscorable. Counts images scored."""

    calls = 0

    def __init__(self, judge=None, offset: float = 0.0):
        self.offset = offset

    def score_batch(self, batch):
        n = BRIGHT.check_batch(batch)
        Brightness.calls += n
        out = []
        for img in batch["image"]:
            mean = float(np.asarray(to_pil(img)).mean())
            out.append(Rec(None, False, "black") if mean == 0 else Rec(min(mean + self.offset, 255.0), True,
                                                                         "bright" if mean > 128 else "dark"))
        return out


class Closeness:
    """100 - mean absolute pixel difference / 2.55 between reference and generated (0..100)."""

    def __init__(self, judge=None):
        pass

    def score_batch(self, batch):
        CLOSE.check_batch(batch)
        out = []
        for ref, gen in zip(batch["reference"], batch["generated"]):
            a = np.asarray(to_pil(ref).resize((16, 16)), dtype=float)
            b = np.asarray(to_pil(gen).resize((16, 16)), dtype=float)
            out.append(Rec(100.0 - np.abs(a - b).mean() / 2.55, True))
        return out


def _render(record):
    text = "n/a" if record.score is None else f"{record.score:.1f}"
    return {"score_text": text, "markdown": f"**score** {text}\n\n- **top**: {record.note}"}


BRIGHT = MethodSpec(name="integ_bright", inputs=("image",), build=Brightness, score_range=(0.0, 255.0),
                    normalize=lambda s: s / 255.0, render=_render, optional_inputs=("prompt", "id"))
CLOSE = MethodSpec(name="integ_close", inputs=("reference", "generated"), build=Closeness,
                   score_range=(0.0, 100.0), normalize=lambda s: s / 100.0, render=_render)
BROKEN = MethodSpec(name="integ_broken", inputs=("image",), build=Brightness, score_range=(0.0, 255.0),
                    normalize=lambda s: s / 100.0, render=_render)

TOYS = (BRIGHT, CLOSE, BROKEN)


class TorchBrightness:
    """Mean pixel value 0..255 read back from a 256 x 256 torch matmul, large enough that torch
    runs it on its OpenMP threads (the fork-safety test needs a parallel op in the workers)."""

    def __init__(self, judge=None):
        pass

    def score_batch(self, batch):
        import torch

        TORCH_BRIGHT.check_batch(batch)
        out = []
        for img in batch["image"]:
            level = torch.full((256, 256), float(np.asarray(to_pil(img)).mean()), dtype=torch.float64)
            out.append(Rec(float(((level @ level)[0, 0] / 256) ** 0.5), True))
        return out


#: Not in TOYS: registered only by the test that needs torch.
TORCH_BRIGHT = MethodSpec(name="integ_torch_bright", inputs=("image",), build=TorchBrightness,
                          score_range=(0.0, 255.0), normalize=lambda s: s / 255.0, render=_render)
