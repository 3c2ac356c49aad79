"""Tiny random CLIP, DINOv2 and SigLIP checkpoints, built offline, so encoder code runs its real loading path in tests.

Each builder writes a ``save_pretrained`` folder (config, safetensors weights,
processor files) that ``AutoModel.from_pretrained`` and
``AutoProcessor.from_pretrained`` load back like a Hub checkpoint, and returns
that folder. Weights are random (seeded), images are 32 px, everything is a
few hundred kB, and nothing touches the network: tokenizers are trained on a
built-in caption corpus.

SigLIP's stock tokenizer needs ``sentencepiece``; the tiny SigLIP instead ships
a ``tokenizers``-backed metaspace BPE tokenizer with the same conventions
(lowercase, ``</s>`` appended, ``</s>`` as pad, fixed length), so it loads
without that dependency. Like real SigLIP, text must be padded with
``padding="max_length"`` (and ``truncation=True`` for long prompts).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["CAPTION_CORPUS", "build_tiny_clip", "build_tiny_dinov2", "build_tiny_siglip"]

_COLOURS = ("red", "green", "blue", "yellow", "black", "white", "orange", "purple", "brown", "grey")
_THINGS = (
    "cat", "dog", "car", "house", "tree", "person", "woman", "man", "bird", "horse",
    "apple", "chair", "table", "boat", "flower", "mountain", "street", "city", "cup", "book",
)
_STYLES = (
    "a photo of", "a photorealistic image of", "a painting of", "a drawing of", "a cartoon of",
    "an illustration of", "a 3d render of", "a sketch of", "a stylized picture of", "an image of",
)

#: Short captions the tiny tokenizers are trained on (zero-shot prompts tokenize into real pieces).
CAPTION_CORPUS: tuple[str, ...] = tuple(
    f"{style} a {colour} {thing}" for style in _STYLES for colour in _COLOURS for thing in _THINGS
)

_HIDDEN = 32
_LAYERS = 2
_HEADS = 2
_PATCH = 8
_TEXT_LEN = 32


def build_tiny_clip(path: str | os.PathLike, *, image_size: int = 32, seed: int = 0) -> str:
    """Write a tiny random CLIPModel + CLIPProcessor (byte-level BPE tokenizer) for image and text embeddings."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    tokenizer = CLIPTokenizer().train_new_from_iterator(CAPTION_CORPUS, vocab_size=512)
    tokenizer.model_max_length = _TEXT_LEN
    config = CLIPConfig(
        text_config=_text_dims(tokenizer),
        vision_config=_vision_dims(image_size),
        projection_dim=16,
    )
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": image_size},
        crop_size={"height": image_size, "width": image_size},
    )
    processor = CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer)
    return _save(path, lambda: CLIPModel(config), processor, seed)


def build_tiny_dinov2(path: str | os.PathLike, *, image_size: int = 32, seed: int = 0) -> str:
    """Write a tiny random Dinov2Model + its BiT image processor for image-image similarity."""
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    config = Dinov2Config(
        hidden_size=_HIDDEN,
        num_hidden_layers=_LAYERS,
        num_attention_heads=_HEADS,
        mlp_ratio=2,
        image_size=image_size,
        patch_size=_PATCH,
    )
    image_processor = BitImageProcessor(
        size={"shortest_edge": image_size},
        crop_size={"height": image_size, "width": image_size},
        do_center_crop=True,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
        do_convert_rgb=True,
    )
    return _save(path, lambda: Dinov2Model(config), image_processor, seed)


def build_tiny_siglip(path: str | os.PathLike, *, image_size: int = 32, seed: int = 0) -> str:
    """Write a tiny random SiglipModel + SiglipProcessor for zero-shot image classification."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    tokenizer = _metaspace_bpe_tokenizer()
    config = SiglipConfig(
        text_config={**_text_dims(tokenizer), "projection_size": _HIDDEN},
        vision_config=_vision_dims(image_size),
    )
    image_processor = SiglipImageProcessor(size={"height": image_size, "width": image_size})
    processor = SiglipProcessor(image_processor=image_processor, tokenizer=tokenizer)
    return _save(path, lambda: SiglipModel(config), processor, seed)


# ---------------------------------------------------------------------------


def _text_dims(tokenizer: Any) -> dict[str, Any]:
    return {
        "vocab_size": len(tokenizer),
        "hidden_size": _HIDDEN,
        "intermediate_size": 2 * _HIDDEN,
        "num_hidden_layers": _LAYERS,
        "num_attention_heads": _HEADS,
        "max_position_embeddings": _TEXT_LEN,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }


def _vision_dims(image_size: int) -> dict[str, Any]:
    if image_size % _PATCH:
        raise ValueError(f"image_size must be a multiple of {_PATCH}, got {image_size}")
    return {
        "hidden_size": _HIDDEN,
        "intermediate_size": 2 * _HIDDEN,
        "num_hidden_layers": _LAYERS,
        "num_attention_heads": _HEADS,
        "image_size": image_size,
        "patch_size": _PATCH,
    }


def _metaspace_bpe_tokenizer() -> Any:
    """A SigLIP-style tokenizer (lowercase, metaspace, ``</s>`` appended) without sentencepiece."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "</s>", "<unk>"], show_progress=False)
    backend.train_from_iterator(CAPTION_CORPUS, trainer)
    eos_id = backend.token_to_id("</s>")
    backend.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos_id)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="</s>",
        pad_token="</s>",
        unk_token="<unk>",
        model_max_length=_TEXT_LEN,
    )


def _save(path: str | os.PathLike, make_model: Callable[[], Any], processor: Any, seed: int) -> str:
    import torch

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    with torch.random.fork_rng(devices=[]):  # seeded without disturbing the caller's RNG
        torch.manual_seed(seed)
        model = make_model().eval()
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return str(out)
