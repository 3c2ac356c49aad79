"""CLIPScore through torchmetrics: max(100 * cos(image, prompt), 0) with any CLIP or SigLIP checkpoint.

torchmetrics' functional `clip_score` computes every number (its scale of 100 and its clamp at 0,
the convention FAGER's CLIPScore of about 31 follows); `clip_models` hands it the checkpoint. The
default is torchmetrics' own default, CLIP ViT-L/14; TerraVis used a SigLIP2 checkpoint
(`model="google/siglip2-so400m-patch14-384"`), scored by the same definition.
"""
from __future__ import annotations

from typing import Any

from .base import Item, TrainedScorer, check_loadable, default_device, package_version, require, trained_spec

#: The optional extra that installs this scorer (None: vlmjudge's own dependencies suffice).
EXTRA = None
#: Modules that must import for this scorer to run.
REQUIRES = ("torchmetrics", "transformers")
#: torchmetrics' default CLIPScore checkpoint.
DEFAULT_MODEL = "openai/clip-vit-large-patch14"


class ClipScoreScorer(TrainedScorer):
    """Scores `image` against `prompt` with torchmetrics' CLIPScore, one item per call.

    Args:
        judge: not used: a trained scorer has no judge (every method is built with one).
        model: the CLIP checkpoint: a Hub id or a local folder.
        device: where it runs; None: "cuda" when a GPU is available, else "cpu".
        dtype: the model's dtype ("float32", "bfloat16", ...); None: float32.
        revision: the checkpoint's revision on the Hub.

    Examples:
        A tiny random CLIP built offline, loaded through `from_pretrained`:

        >>> import tempfile
        >>> from PIL import Image
        >>> from vlmjudge.testing import build_tiny_clip
        >>> scorer = ClipScoreScorer(model=build_tiny_clip(tempfile.mkdtemp() + "/clip"), device="cpu")
        >>> good, bad = scorer.score_batch({"image": [Image.new("RGB", (40, 32), "red")] * 2,
        ...                                 "prompt": ["a photo of a red cat", ""]})
        >>> 0.0 <= good.score <= 100.0, bad.status, bad.error
        (True, 'failed', 'empty prompt')
    """

    def __init__(self, judge: Any = None, *, model: str = DEFAULT_MODEL, device: str | None = None,
                 dtype: str | None = None, revision: str | None = None) -> None:
        require("clipscore", EXTRA, "torchmetrics.functional.multimodal")
        check_loadable("clipscore", "checkpoint", model, revision)
        import torch

        from .clip_models import load_feature_model

        self.device = default_device(device)
        self.model, self.processor = load_feature_model(
            str(model), device=self.device, dtype=getattr(torch, dtype) if dtype else None, revision=revision)
        self.made_by = {"package": package_version("torchmetrics"), "model": str(model),
                        "revision": revision}

    @property
    def spec(self) -> Any:
        return SPEC

    def details(self, item: Item) -> dict[str, Any]:
        """Whether the prompt was longer than the text tower takes, and so cut (as every CLIPScore does)."""
        return {} if item.prompt is None else {"prompt_truncated": self.processor.too_long(item.prompt)}

    def _pair(self) -> tuple[Any, Any]:
        return self.model, self.processor

    def score_chunk(self, items: list[Item]) -> list[float]:
        import torch
        from torchmetrics.functional.multimodal import clip_score
        from torchvision.transforms.functional import pil_to_tensor

        scores = []
        with torch.inference_mode():
            for item in items:
                image = pil_to_tensor(item.image).to(self.device)
                scores.append(float(clip_score(image, item.prompt, model_name_or_path=self._pair)))
        return scores


def build(judge: Any, **config: Any) -> ClipScoreScorer:
    """A CLIPScore scorer; config: model, device, dtype, revision. A judge, if given, is not used."""
    return ClipScoreScorer(judge, **config)


SPEC = trained_spec(
    extra=EXTRA, requires=REQUIRES, scorer=ClipScoreScorer,
    name="clipscore", inputs=("image", "prompt"), build=build, score_range=(0.0, 100.0), label="mean CLIPScore",
    higher_is_better=True,
    description="CLIPScore through torchmetrics: max(100 * cosine of image and prompt embeddings, 0), with any "
                "CLIP or fixed-resolution SigLIP/SigLIP2 checkpoint (model=).")
