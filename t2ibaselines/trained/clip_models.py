"""A CLIP or SigLIP checkpoint shaped the way torchmetrics' CLIPScore calls a model and processor.

torchmetrics 1.9 takes a callable returning (model, processor) for any checkpoint besides its named
ones. Two things need a thin layer over transformers 5: `get_image_features`/`get_text_features`
now return an output object whose `pooler_output` is the projected embedding, which torchmetrics
1.9 reads as a tensor (its issue 3407, fixed after 1.9.0); and SigLIP was trained on text padded
to its full length with no attention mask (its text tower pools the last position), so its text
goes in padded to `max_position_embeddings` and unmasked, as SigLIP's own examples do. A prompt
longer than the text tower is cut by the tokenizer, which keeps the end token CLIP pools at.
A NaFlex SigLIP2 (`siglip2`) needs patch shapes that CLIPScore cannot pass: it is refused.
"""
from __future__ import annotations

from typing import Any

import torch

#: model_type -> family; anything else is refused before it can give a wrong number.
FAMILIES = {"clip": "clip", "siglip": "siglip"}


def _tensor(output: Any) -> Any:
    """The projected embedding, whether transformers returned it bare (4.x) or wrapped (5.x)."""
    return output if hasattr(output, "dim") else output.pooler_output


def family_of(model_type: str, model_id: str) -> str:
    """'clip' or 'siglip' for a checkpoint's model_type; a one-line ValueError for any other.

    Examples:
        >>> family_of("siglip", "google/siglip2-so400m-patch14-384")
        'siglip'
        >>> family_of("siglip2", "google/siglip2-so400m-patch16-naflex")
        Traceback (most recent call last):
        ...
        ValueError: google/siglip2-so400m-patch16-naflex is a NaFlex SigLIP2 (model_type siglip2), whose patch shapes CLIPScore cannot pass; use a fixed-resolution SigLIP2 checkpoint (model_type siglip)
    """
    if model_type == "siglip2":
        raise ValueError(f"{model_id} is a NaFlex SigLIP2 (model_type siglip2), whose patch shapes CLIPScore cannot "
                         "pass; use a fixed-resolution SigLIP2 checkpoint (model_type siglip)")
    if model_type not in FAMILIES:
        raise ValueError(f"{model_id} is a {model_type!r} model; CLIPScore here takes CLIP or SigLIP checkpoints "
                         f"(model_type {' or '.join(FAMILIES)})")
    return FAMILIES[model_type]


def load_feature_model(model_id: str, *, device: str, dtype: Any = None, revision: str | None = None) -> tuple[Any, Any]:
    """(model, processor) for torchmetrics' CLIPScore, loaded with `from_pretrained` (Hub id or folder)."""
    from transformers import AutoConfig, AutoModel, AutoProcessor

    config = AutoConfig.from_pretrained(model_id, revision=revision)
    family = family_of(config.model_type, model_id)
    model = AutoModel.from_pretrained(model_id, revision=revision, dtype=dtype or torch.float32).to(device).eval()
    processor = AutoProcessor.from_pretrained(model_id, revision=revision)
    if not hasattr(processor, "image_processor"):
        raise ValueError(f"{model_id}: AutoProcessor gave a {type(processor).__name__}, not an image-text processor")
    length = config.text_config.max_position_embeddings
    siglip = family == "siglip"
    return FeatureModel(model, text_mask=not siglip), CutText(processor, length, full_length=siglip)


class FeatureModel(torch.nn.Module):
    """A transformers CLIP or SigLIP model whose feature methods return tensors, as torchmetrics reads them."""

    def __init__(self, model: Any, *, text_mask: bool) -> None:
        super().__init__()
        self.model = model
        self.config = model.config  # torchmetrics reads text_config.max_position_embeddings from it
        self.text_mask = text_mask

    def get_image_features(self, pixel_values: Any) -> Any:
        return _tensor(self.model.get_image_features(pixel_values=pixel_values.to(self.model.dtype)))

    def get_text_features(self, input_ids: Any, attention_mask: Any = None) -> Any:
        mask = attention_mask if self.text_mask else None  # SigLIP: unmasked, as it was trained
        return _tensor(self.model.get_text_features(input_ids=input_ids, attention_mask=mask))


class CutText:
    """A processor whose text is cut at the text tower's length by the tokenizer, which keeps the
    end token CLIP pools at (torchmetrics would cut the ids after it and lose it); for SigLIP also
    padded to that full length."""

    def __init__(self, processor: Any, length: int, *, full_length: bool) -> None:
        self.processor, self.length, self.full_length = processor, int(length), full_length
        self.image_processor = processor.image_processor

    def __call__(self, *args: Any, text: Any = None, **kwargs: Any) -> Any:
        if text is not None:
            kwargs.update(truncation=True, max_length=self.length)
            if self.full_length:
                kwargs["padding"] = "max_length"
        return self.processor(*args, text=text, **kwargs)

    def too_long(self, text: str) -> bool:
        """Whether `text` has more tokens than the text tower takes (so it is cut)."""
        return len(self.processor.tokenizer(text)["input_ids"]) > self.length
