"""ImageReward (Xu et al., 2023) through the authors' `image-reward` package (import name ImageReward).

`ImageReward.load(name_or_path, device=, download_root=, med_config=)` builds the package's BLIP
reward model and loads the release (from the Hub by name, or a local file); `model.score(prompt,
image)` gives the standardised reward of one image. Its one release, 1.5, imports helpers that
transformers 5 removed (`apply_chunking_to_forward` from `transformers.modeling_utils`), and this
project needs transformers 5, so here the method fails in one line naming the extra and that reason;
the adapter follows the package's documented API for a release that imports.
"""
from __future__ import annotations

from typing import Any

from .base import Item, TrainedScorer, default_device, package_version, quiet_stdout, require, trained_spec

#: The optional extra that installs this scorer.
EXTRA = "imagereward"
#: Modules that must import for this scorer to run.
REQUIRES = ("ImageReward",)
DEFAULT_MODEL = "ImageReward-v1.0"
#: The reward is standardised (mean 0.167, std 1.033 subtracted and divided in the package); ten
#: standard deviations either side is the declared range, past which a value is not passed as a score.
SCORE_RANGE = (-10.0, 10.0)


class ImageRewardScorer(TrainedScorer):
    """Scores `image` against `prompt` with ImageReward, one item per call as the package scores.

    Args:
        judge: not used: a trained scorer has no judge (every method is built with one).
        model: the checkpoint, as `ImageReward.load` takes it: a released name or a file.
        med_config: the BLIP configuration file; None: the package's.
        download_root: where the package downloads its files; None: its default.
        device: where it runs; None: "cuda" when a GPU is available, else "cpu".
    """

    def __init__(self, judge: Any = None, *, model: str = DEFAULT_MODEL, med_config: str | None = None,
                 download_root: str | None = None, device: str | None = None) -> None:
        reward = require("imagereward", EXTRA, "ImageReward")
        self.device = default_device(device)
        with quiet_stdout():
            self.model = reward.load(str(model), device=self.device, download_root=download_root,
                                     med_config=med_config)
        self.made_by = {"package": package_version("image-reward"), "model": str(model)}

    @property
    def spec(self) -> Any:
        return SPEC

    def score_chunk(self, items: list[Item]) -> list[float]:
        import torch

        with torch.inference_mode():
            return [float(self.model.score(item.prompt, item.image)) for item in items]


def build(judge: Any, **config: Any) -> ImageRewardScorer:
    """An ImageReward scorer; config: model (name or file), med_config, download_root, device. A judge is not used."""
    return ImageRewardScorer(judge, **config)


SPEC = trained_spec(
    extra=EXTRA, requires=REQUIRES, scorer=ImageRewardScorer,
    name="imagereward", inputs=("image", "prompt"), build=build, score_range=SCORE_RANGE,
    label="mean ImageReward", higher_is_better=True,
    description="ImageReward through the authors' image-reward package: a BLIP-based reward model's standardised "
                "human-preference reward for an image and its prompt.")
