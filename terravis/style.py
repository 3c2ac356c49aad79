"""Zero-shot photorealistic vs stylized classification with SigLIP, as in the paper's split.

The model loads with `from_pretrained` on first use (a Hub id or a local folder), so
importing TerraVis never loads it; any callable images -> labels can replace it.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

DEFAULT_MODEL = "google/siglip-so400m-patch14-384"
#: Each style label with the captions that describe it; an image gets the label of its best caption.
DEFAULT_PROMPTS: Mapping[str, tuple[str, ...]] = {
    "photorealistic": ("a photo", "a photorealistic image", "a photograph taken with a camera"),
    "stylized": ("a painting", "a cartoon", "an illustration", "a drawing", "a sketch", "a 3d render"),
}


class SigLIPStyleClassifier:
    """Labels images "photorealistic" or "stylized" by SigLIP image-caption similarity."""

    def __init__(self, model: str = DEFAULT_MODEL, prompts: Mapping[str, Sequence[str]] | None = None,
                 device: str | None = None, batch_size: int = 16, revision: str | None = None) -> None:
        self.model_id, self.revision, self.device, self.batch_size = model, revision, device, batch_size
        self.prompts = {k: tuple(v) for k, v in (prompts or DEFAULT_PROMPTS).items()}
        if len(self.prompts) < 2 or any(not v for v in self.prompts.values()):
            raise ValueError("style prompts need at least two labels, each with at least one caption")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._model: Any = None
        self._processor: Any = None

    def _load(self) -> None:
        from vlmjudge.offline import ModelUnavailableError, unavailable_reason
        reason = unavailable_reason(self.model_id, self.revision)
        if reason is not None:  # offline, from_pretrained would retry the Hub for half a minute first
            default = " (the default)" if self.model_id == DEFAULT_MODEL else ""
            raise ModelUnavailableError(
                f"SigLIP style model {self.model_id!r}{default} is {reason}: pass model= a local folder or a "
                "cached Hub id (`python -m vlmjudge.testing siglip DIR` builds a tiny offline one)")
        import torch
        from transformers import AutoModel, AutoProcessor

        self._processor = AutoProcessor.from_pretrained(self.model_id, revision=self.revision)
        if not hasattr(self._processor, "image_processor"):
            raise TypeError(f"{self.model_id!r} has no image processor; is it a SigLIP checkpoint?")
        self.device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._model = AutoModel.from_pretrained(self.model_id, revision=self.revision).to(self.device).eval()

    def __call__(self, images: Sequence[Any]) -> list[str]:
        """One label per image, in order."""
        import torch
        from vlmjudge.images import to_pil

        if self._model is None:
            self._load()
        labels = [label for label, caps in self.prompts.items() for _ in caps]
        captions = [c for caps in self.prompts.values() for c in caps]
        out: list[str] = []
        for start in range(0, len(images), self.batch_size):
            chunk = [to_pil(img, index=start + k) for k, img in enumerate(images[start:start + self.batch_size])]
            inputs = self._processor(text=captions, images=chunk, padding="max_length", truncation=True,
                                     return_tensors="pt").to(self.device)
            with torch.inference_mode():
                logits = self._model(**inputs).logits_per_image  # (images, captions)
            out.extend(labels[int(i)] for i in logits.argmax(dim=-1))
        return out
