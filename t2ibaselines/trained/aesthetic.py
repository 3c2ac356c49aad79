"""LAION-Aesthetic v2.5 through its `aesthetic-predictor-v2-5` package: SigLIP image features and the
released MLP head, a 1-10 aesthetic rating (TerraVis's LAION-Aesthetic baseline).

`convert_v2_5_from_siglip(predictor_name_or_path, encoder_model_name)` loads the SigLIP vision tower
by `from_pretrained` and the head from a file (or, with none given, downloads the released head);
the score is the model's logit for the processor's pixels (float32 unless `dtype=` says otherwise;
the authors' example runs bfloat16 on a GPU).
"""
from __future__ import annotations

import os
from typing import Any

from .base import Item, TrainedScorer, check_loadable, default_device, package_version, quiet_stdout, require, trained_spec

#: The optional extra that installs this scorer.
EXTRA = "aesthetic"
#: Modules that must import for this scorer to run.
REQUIRES = ("aesthetic_predictor_v2_5",)
DEFAULT_ENCODER = "google/siglip-so400m-patch14-384"
#: The rating scale the head was trained on is 1-10; outputs outside 0-10 are not passed as scores.
SCORE_RANGE = (0.0, 10.0)


class AestheticScorer(TrainedScorer):
    """Scores `image` with Aesthetic Predictor v2.5.

    Args:
        judge: not used: a trained scorer has no judge (every method is built with one).
        predictor: the predictor head file; None: the released v2.5 head.
        encoder: the SigLIP encoder the head reads: a Hub id or a local folder.
        device: where it runs; None: "cuda" when a GPU is available, else "cpu".
        dtype: the model's dtype ("float32", "bfloat16", ...); None: float32.
        batch_size: images per forward pass.
    """

    def __init__(self, judge: Any = None, *, predictor: str | None = None, encoder: str = DEFAULT_ENCODER,
                 device: str | None = None, dtype: str | None = None, batch_size: int = 16) -> None:
        package = require("aesthetic", EXTRA, "aesthetic_predictor_v2_5")
        if batch_size < 1:
            raise ValueError(f"aesthetic: batch_size must be >= 1, got {batch_size}")
        if predictor is not None and not os.path.isfile(predictor):
            # the package would silently download the released head instead of a missing file
            raise FileNotFoundError(f"aesthetic: no predictor head file at {predictor}")
        check_loadable("aesthetic", "SigLIP encoder", encoder)
        self.device, self.batch_size = default_device(device), batch_size
        with quiet_stdout():
            model, self.processor = package.convert_v2_5_from_siglip(
                predictor_name_or_path=None if predictor is None else str(predictor), encoder_model_name=str(encoder),
                low_cpu_mem_usage=True, trust_remote_code=True)
        import torch

        self.model = model.to(self.device, getattr(torch, dtype) if dtype else torch.float32).eval()
        self.made_by = {"package": package_version("aesthetic-predictor-v2-5"), "encoder": str(encoder),
                        "predictor": "released v2.5 head" if predictor is None else str(predictor)}

    @property
    def spec(self) -> Any:
        return SPEC

    def score_chunk(self, items: list[Item]) -> list[float]:
        import torch

        pixels = self.processor(images=[item.image for item in items], return_tensors="pt").pixel_values
        with torch.inference_mode():
            logits = self.model(pixels.to(self.device, self.model.dtype)).logits
        return [float(v) for v in logits.float().reshape(-1).cpu()]


def build(judge: Any, **config: Any) -> AestheticScorer:
    """An aesthetic scorer; config: predictor (head file), encoder, device, dtype, batch_size. A judge is not used."""
    return AestheticScorer(judge, **config)


SPEC = trained_spec(
    extra=EXTRA, requires=REQUIRES, scorer=AestheticScorer,
    name="aesthetic", inputs=("image",), build=build, score_range=SCORE_RANGE, label="mean aesthetic score",
    higher_is_better=True,
    description="LAION-Aesthetic v2.5 through aesthetic-predictor-v2-5: a SigLIP-based predictor of a 1-10 "
                "aesthetic rating (5.5 and above is considered high by its authors).")
