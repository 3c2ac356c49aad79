"""Tiny random diffusers pipelines, built offline, so generator code runs its real loading path in tests.

`build_tiny_text_to_image` writes a Stable Diffusion pipeline and `build_tiny_image_edit`
an InstructPix2Pix pipeline (image + instruction), each with a UNet, VAE and CLIP text
encoder of a few hundred kB. Both load back with `DiffusionPipeline.from_pretrained(dir)`
like a Hub checkpoint and run a step or two at 32-64 px in well under a second on CPU.
Weights are random (seeded), so images are noise with structure: good for plumbing,
never for quality.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["build_tiny_image_edit", "build_tiny_text_to_image"]

_TEXT_LEN = 32
_CROSS_DIM = 32


def build_tiny_text_to_image(path: str | os.PathLike, *, seed: int = 0) -> str:
    """Write a tiny random StableDiffusionPipeline (4 latent channels in the UNet)."""
    from diffusers import StableDiffusionPipeline
    return _build(path, StableDiffusionPipeline, unet_in_channels=4, seed=seed)


def build_tiny_image_edit(path: str | os.PathLike, *, seed: int = 0) -> str:
    """Write a tiny random StableDiffusionInstructPix2PixPipeline (image latents concatenated: 8 channels)."""
    from diffusers import StableDiffusionInstructPix2PixPipeline
    return _build(path, StableDiffusionInstructPix2PixPipeline, unet_in_channels=8, seed=seed)


def _build(path: str | os.PathLike, pipeline_cls: Any, *, unet_in_channels: int, seed: int) -> str:
    import torch
    from diffusers import AutoencoderKL, EulerDiscreteScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    from .tiny_encoders import CAPTION_CORPUS

    tokenizer = CLIPTokenizer().train_new_from_iterator(CAPTION_CORPUS, vocab_size=400)
    tokenizer.model_max_length = _TEXT_LEN
    with torch.random.fork_rng(devices=[]):  # seeded without disturbing the caller's RNG
        torch.manual_seed(seed)
        text_encoder = CLIPTextModel(CLIPTextConfig(
            vocab_size=len(tokenizer), hidden_size=_CROSS_DIM, intermediate_size=2 * _CROSS_DIM,
            num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=_TEXT_LEN,
            bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id)).eval()
        unet = UNet2DConditionModel(
            sample_size=16, in_channels=unet_in_channels, out_channels=4, layers_per_block=1,
            block_out_channels=(16, 32), norm_num_groups=8, cross_attention_dim=_CROSS_DIM,
            attention_head_dim=4,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D")).eval()
        vae = AutoencoderKL(
            in_channels=3, out_channels=3, latent_channels=4, layers_per_block=1,
            block_out_channels=(16, 32), norm_num_groups=8, sample_size=32,
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D")).eval()
    scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                       num_train_timesteps=1000, steps_offset=1)
    pipe = pipeline_cls(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet, scheduler=scheduler,
                        safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    pipe.save_pretrained(out)
    return str(out)
