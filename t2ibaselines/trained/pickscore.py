"""PickScore (Kirstain et al., 2023): its fine-tuned CLIP-H scores an image against its prompt.

As the authors' model card computes it with transformers: the processor of the CLIP-H it was tuned
from and the PickScore checkpoint, both by `from_pretrained`; image and prompt (padded, cut at 77
tokens) embedded and normalised; the score is exp(logit_scale) * cosine. Comparing candidates for
one prompt takes the softmax of their scores (`preference_probs`). CLIP clamps exp(logit_scale) at
100 in training, so the score lies in [-100, 100]; a checkpoint with a larger scale is refused.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .base import Item, TrainedScorer, check_loadable, default_device, package_version, trained_spec

#: The optional extra that installs this scorer (None: vlmjudge's own dependencies suffice).
EXTRA = None
#: Modules that must import for this scorer to run.
REQUIRES = ("transformers",)
DEFAULT_MODEL = "yuvalkirstain/PickScore_v1"
DEFAULT_PROCESSOR = "laion/CLIP-ViT-H-14-laion2B-s32B-b79K"
#: CLIP's clamp on exp(logit_scale), which bounds the score.
MAX_SCALE = 100.0


def preference_probs(scores: Sequence[float]) -> list[float]:
    """PickScore's probability that each candidate image is the preferred one for the same prompt:
    the softmax of their scores.

    Examples:
        >>> [round(p, 4) for p in preference_probs([21.0, 20.0])]
        [0.7311, 0.2689]
    """
    if not scores or not all(math.isfinite(s) for s in scores):
        raise ValueError(f"preference_probs needs finite scores, got {list(scores)}")
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    return [w / sum(weights) for w in weights]


class PickScoreScorer(TrainedScorer):
    """Scores `image` against `prompt` with PickScore, a batch of items per forward pass.

    Args:
        judge: not used: a trained scorer has no judge (every method is built with one).
        model: the PickScore checkpoint: a Hub id or a local folder.
        processor: the processor it was trained with (the LAION CLIP-H one): a Hub id or a folder.
        device: where it runs; None: "cuda" when a GPU is available, else "cpu".
        dtype: the model's dtype ("float32", "bfloat16", ...); None: float32.
        revision: the checkpoint's revision on the Hub.
        batch_size: items per forward pass.

    Examples:
        A tiny random CLIP stands in for both the checkpoint and the processor:

        >>> import tempfile
        >>> from PIL import Image
        >>> from vlmjudge.testing import build_tiny_clip
        >>> tiny = build_tiny_clip(tempfile.mkdtemp() + "/clip")
        >>> [record] = PickScoreScorer(model=tiny, processor=tiny, device="cpu").score_batch(
        ...     {"image": [Image.new("RGB", (32, 32), "blue")], "prompt": ["a blue car"], "id": ["car"]})
        >>> record.id, record.status, -100.0 <= record.score <= 100.0
        ('car', 'scored', True)
    """

    def __init__(self, judge: Any = None, *, model: str = DEFAULT_MODEL, processor: str = DEFAULT_PROCESSOR,
                 device: str | None = None, dtype: str | None = None, revision: str | None = None,
                 batch_size: int = 16) -> None:
        import torch
        from transformers import AutoModel, AutoProcessor

        if batch_size < 1:
            raise ValueError(f"pickscore: batch_size must be >= 1, got {batch_size}")
        check_loadable("pickscore", "checkpoint", model, revision)
        check_loadable("pickscore", "processor", processor)
        self.device, self.batch_size = default_device(device), batch_size
        self.dtype = getattr(torch, dtype) if dtype else torch.float32
        self.model = AutoModel.from_pretrained(str(model), revision=revision, dtype=self.dtype).to(self.device).eval()
        self.processor = AutoProcessor.from_pretrained(str(processor))
        if not hasattr(self.model, "get_image_features") or not hasattr(self.model, "logit_scale"):
            raise ValueError(f"pickscore: {model} ({type(self.model).__name__}) is not a CLIP model")
        self.scale = float(self.model.logit_scale.detach().exp())
        if not 0.0 < self.scale <= MAX_SCALE:
            raise ValueError(f"pickscore: {model} has exp(logit_scale) = {self.scale:g}, outside CLIP's (0, 100]")
        self.made_by = {"package": package_version("transformers"), "model": str(model),
                        "processor": str(processor), "revision": revision}

    @property
    def spec(self) -> Any:
        return SPEC

    def score_chunk(self, items: list[Item]) -> list[float]:
        import torch

        def features(output: Any) -> Any:
            tensor = output if hasattr(output, "dim") else output.pooler_output  # transformers 5 wraps them
            return tensor / tensor.norm(dim=-1, keepdim=True)

        with torch.inference_mode():
            pixels = self.processor(images=[item.image for item in items], return_tensors="pt")["pixel_values"]
            text = self.processor(text=[item.prompt for item in items], padding=True, truncation=True, max_length=77,
                                  return_tensors="pt").to(self.device)
            image_embeds = features(self.model.get_image_features(pixel_values=pixels.to(self.device, self.dtype)))
            text_embeds = features(self.model.get_text_features(**text))
            scores = self.model.logit_scale.exp() * (image_embeds * text_embeds).sum(dim=-1)
        return [float(s) for s in scores.float().cpu()]


def build(judge: Any, **config: Any) -> PickScoreScorer:
    """A PickScore scorer; config: model, processor, device, dtype, revision, batch_size. A judge is not used."""
    return PickScoreScorer(judge, **config)


SPEC = trained_spec(
    extra=EXTRA, requires=REQUIRES, scorer=PickScoreScorer,
    name="pickscore", inputs=("image", "prompt"), build=build, score_range=(-MAX_SCALE, MAX_SCALE),
    label="mean PickScore", higher_is_better=True,
    description="PickScore: exp(logit_scale) * cosine of image and prompt embeddings of the Pick-a-Pic CLIP-H "
                "checkpoint (typically about 18 to 24); a softmax over candidates gives preference probabilities.")
