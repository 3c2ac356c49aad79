"""HPSv2 / HPSv2.1 (Wu et al., 2023) through the authors' `hpsv2` package and the open_clip it ships.

As `hpsv2.img_score` builds it: `create_model_and_transforms` of the package's own open_clip with
its scoring preprocessing (`light_augmentation`: the longer side resized, padded to square), the
HPS checkpoint loaded over every weight, the package's tokenizer; the score is the cosine of the
normalised image and prompt features. The open_clip weights the package first downloads are all
replaced by the checkpoint, so none are fetched here. On a GPU the forward runs under autocast, as
the package runs it. The extra is `hpsv2x`, the same code as hpsv2 1.2.0 with the two files that
release lacks to import (its tokenizer vocabulary) or drops (a stray `turtle` import).
"""
from __future__ import annotations

from typing import Any

from .base import Item, TrainedScorer, default_device, package_version, quiet_stdout, require, trained_spec

#: The optional extra that installs this scorer.
EXTRA = "hpsv2"
#: Modules that must import for this scorer to run.
REQUIRES = ("hpsv2",)
#: The Hub repository of the released checkpoints, and each version's file (as `hpsv2.utils` names them).
CHECKPOINT_REPO = "xswu/HPSv2"
VERSIONS = {"v2.0": "HPS_v2_compressed.pt", "v2.1": "HPS_v2.1_compressed.pt"}
DEFAULT_ARCH = "ViT-H-14"


def _open_clip() -> Any:
    return require("hpsv2", EXTRA, "hpsv2.src.open_clip")


class HPSv2Scorer(TrainedScorer):
    """Scores `image` against `prompt` with an HPS checkpoint (v2.1 by default, from the Hub, or a file).

    Args:
        judge: not used: a trained scorer has no judge (every method is built with one).
        version: the released checkpoint to download, "v2.0" or "v2.1".
        checkpoint: a local checkpoint file instead of a download.
        arch: the open_clip model name the checkpoint was trained on (ViT-H-14 for the releases).
        device: where it runs; None: "cuda" when a GPU is available, else "cpu".
        batch_size: items per forward pass.
    """

    def __init__(self, judge: Any = None, *, version: str = "v2.1", checkpoint: str | None = None,
                 arch: str = DEFAULT_ARCH, device: str | None = None, batch_size: int = 16) -> None:
        open_clip = _open_clip()
        import torch

        if version not in VERSIONS:
            raise ValueError(f"hpsv2: version must be one of {sorted(VERSIONS)}, got {version!r}")
        if batch_size < 1:
            raise ValueError(f"hpsv2: batch_size must be >= 1, got {batch_size}")
        if open_clip.get_model_config(arch) is None:
            raise ValueError(f"hpsv2: no open_clip model config named {arch!r} in the hpsv2 package")
        self.device, self.batch_size = default_device(device), batch_size
        path = str(checkpoint) if checkpoint is not None else self._download(VERSIONS[version])
        with quiet_stdout():
            self.model, _, self.preprocess = open_clip.create_model_and_transforms(
                arch, None, precision="fp32", device=self.device, jit=False, force_quick_gelu=False,
                force_custom_text=False, force_patch_dropout=False, force_image_size=None, pretrained_image=False,
                image_mean=None, image_std=None, light_augmentation=True, aug_cfg={}, output_dict=True,
                with_score_predictor=False, with_region_predictor=False)
            state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or "state_dict" not in state:
            raise ValueError(f"hpsv2: {path} holds no 'state_dict', so it is not an HPS checkpoint")
        self.model.load_state_dict(state["state_dict"])
        self.model.to(self.device).eval()
        self.tokenizer = open_clip.get_tokenizer(arch)
        source = str(checkpoint) if checkpoint is not None else f"{CHECKPOINT_REPO}/{VERSIONS[version]}"
        self.made_by = {"package": package_version("hpsv2x", "hpsv2"), "arch": arch, "checkpoint": source,
                        "version": None if checkpoint is not None else version}

    @staticmethod
    def _download(filename: str) -> str:
        from huggingface_hub import hf_hub_download

        return hf_hub_download(CHECKPOINT_REPO, filename)

    @property
    def spec(self) -> Any:
        return SPEC

    def score_chunk(self, items: list[Item]) -> list[float]:
        import torch

        images = torch.stack([self.preprocess(item.image) for item in items]).to(self.device)
        text = self.tokenizer([item.prompt for item in items]).to(self.device)
        on_gpu = torch.device(self.device).type == "cuda"  # the package scores under CUDA autocast
        autocast = torch.autocast("cuda") if on_gpu else torch.autocast("cpu", enabled=False)
        with torch.inference_mode(), autocast:
            outputs = self.model(images, text)
            scores = (outputs["image_features"] * outputs["text_features"]).sum(dim=-1)
        return [float(s) for s in scores.float().cpu()]


def build(judge: Any, **config: Any) -> HPSv2Scorer:
    """An HPSv2 scorer; config: version (v2.0, v2.1), checkpoint, arch, device, batch_size. A judge is not used."""
    return HPSv2Scorer(judge, **config)


SPEC = trained_spec(
    extra=EXTRA, requires=REQUIRES, scorer=HPSv2Scorer,
    name="hpsv2", inputs=("image", "prompt"), build=build, score_range=(-1.0, 1.0), label="mean HPS",
    higher_is_better=True,
    description="Human Preference Score v2.1 (or v2.0) through the authors' hpsv2 package: the cosine of image and "
                "prompt features of its fine-tuned open_clip ViT-H-14 (typically about 0.2 to 0.35).")
