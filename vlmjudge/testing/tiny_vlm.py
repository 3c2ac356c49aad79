"""Tiny random vision-language checkpoints, built offline, that load like Hub ones.

Tests and benchmarks need a real `AutoProcessor` + `AutoModelForImageTextToText` round
trip without downloading weights. `build_tiny_vlm` writes a Qwen3-VL or LLaVA checkpoint
of a few hundred thousand parameters whose tokenizer knows every option word the methods
ask for as a single token (bare and after a space), so option logits are real ids.

`yes_bias` sets the mean margin logit(" Yes") - logit(" No") after "Answer:" (on random
probe images) to about that many nats, so benchmarks can pick a positive rate: 0 gives
about half Yes; the per-image spread is about one nat. A residual dimension is held
constant at every text position (each embedding row carries the same value there and no
layer writes to it); the untied LM head reads it only in the Yes/yes rows. It survives
save/load because it lives in ordinary weights; it is approximate because the final RMS
norm scales that dimension with the input.
"""
from __future__ import annotations

import os
import shutil
from typing import Literal

SPECIAL_QWEN = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>"]
SPECIAL_LLAVA = ["<|im_start|>", "<|im_end|>", "<image>"]

#: Words methods use as single-token options; each is a single token bare and after a space.
OPTION_WORDS = ["Yes", "No", "yes", "no", "unknown", "Eligible", "Ineligible", "Major", "Minor",
                "True", "False", "A", "B", "C", "D"]
#: Digits are in the corpus for scores, not options: byte-level BPEs (Qwen's too) split " 7" into " ", "7".
DIGITS = [str(d) for d in range(11)]

#: vLLM's CPU attention takes head sizes 32, 64, 80, ... (16 kills its engine at the first request):
#: `vllm=True` builds text attention of this head size, M-RoPE sections summing to half of it.
VLLM_HEAD_DIM = 32
VLLM_MROPE_SECTION = [8, 4, 4]

YES_WORDS = ("Yes", "yes")
NO_WORDS = ("No", "no")

#: Weight scale: 10x the usual 0.02, so logits differ by image (Yes-No spread ~1 nat) as a
#: trained judge's do, instead of a near-uniform distribution that ignores the input.
INIT_RANGE = 0.2

QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

LLAVA_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] | upper }}: "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}<image>\n"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)

_PROSE = [
    "Is there a cat in the image?", "Describe the image.", "Answer with Yes or No.",
    "Does the image show a red car on the street?", "The object is present and the colour is right.",
    "Rate the image from 0 to 10.", "The text in the image is correct.", "user", "assistant", "system",
    "USER:", "ASSISTANT:", "Answer:", "Reason:", "score", "rationale", "answer", "evidence", "severity",
]
_JSON = ['{"answer": "yes", "rationale": "a dog"}', '{"score": 7, "reasons": ["blue", "sky"]}',
         '{"answer": "No", "severity": "Major", "ok": true, "x": null, "y": false, "v": -1.5e3}',
         "[1, 2, 3]", "{}", "[]", '\\"', "\\n", ":", ",", "{", "}", "[", "]", '"']


def _corpus() -> list[str]:
    spaced = [f"Answer: {w}. Reason: {w} {w}" for w in OPTION_WORDS]
    return (OPTION_WORDS + spaced + DIGITS + _PROSE + _JSON) * 20


def _train_tokenizer(special: list[str], eos: str, extra: tuple[str, ...] = (), vocab_size: int = 600):
    from transformers import Qwen2Tokenizer
    tok = Qwen2Tokenizer().train_new_from_iterator([_corpus() + list(extra)], vocab_size=vocab_size,
                                                   new_special_tokens=special)
    tok.pad_token, tok.eos_token = "<|endoftext|>", eos
    for word in OPTION_WORDS:
        for form in (word, " " + word):
            n = len(tok.encode(form, add_special_tokens=False))
            if n != 1:  # otherwise option logits would silently read some other id
                raise AssertionError(f"tiny tokenizer splits option {form!r} into {n} tokens")
    return tok


def build_tiny_vlm(path: str | os.PathLike, family: Literal["qwen3_vl", "llava"] = "qwen3_vl",
                   image_tokens: Literal["realistic"] | None = None, yes_bias: float = 0.0,
                   seed: int = 0, vllm: bool = False, corpus: tuple[str, ...] = (), vocab_size: int = 600,
                   max_pixels: int | None = None) -> str:
    """Write a tiny random checkpoint + processor to `path` (replaced) and return the path.

    `corpus` adds texts to the tokenizer's training corpus and `vocab_size` sizes it (the demo
    judge's tokenizer holds whole words this way); the defaults give every other builder's.
    `max_pixels` (Qwen3-VL only) sets the processor's pixel budget (the demo judge's is larger).

    `vllm=True` (Qwen3-VL only) gives the text attention a head size vLLM's CPU build runs.

    `image_tokens="realistic"` gives the visual-token counts of a real model (a 1024x1024
    image -> 1024 tokens for Qwen3-VL; 1024 tokens per image for LLaVA); the default keeps
    images at 16-64 tokens so tests stay fast.
    """
    import torch
    if family not in ("qwen3_vl", "llava"):
        raise ValueError(f"unknown family {family!r}; choose 'qwen3_vl' or 'llava'")
    if image_tokens not in (None, "realistic"):
        raise ValueError(f"image_tokens must be None or 'realistic', got {image_tokens!r}")
    if vllm and family != "qwen3_vl":
        raise ValueError(f"vllm=True is built for qwen3_vl here, not {family}")
    torch.manual_seed(seed)
    realistic = image_tokens == "realistic"
    if max_pixels is not None and family != "qwen3_vl":
        raise ValueError(f"max_pixels is built for qwen3_vl here, not {family}")
    if max_pixels is not None and not (isinstance(max_pixels, int) and max_pixels >= 32 * 32):
        raise ValueError(f"max_pixels must be an int of at least {32 * 32} (one visual token), got {max_pixels!r}")
    model, processor = (_build_qwen3_vl(realistic, vllm, corpus, vocab_size, max_pixels) if family == "qwen3_vl"
                        else _build_llava(realistic, corpus, vocab_size))
    tok = processor.tokenizer
    yes_ids = [tok.encode(form, add_special_tokens=False)[0] for w in YES_WORDS for form in (" " + w, w)]
    _install_yes_bias(model, processor, yes_ids, tok.encode(" No", add_special_tokens=False)[0], yes_bias)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    out = os.fspath(path)
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def _build_qwen3_vl(realistic: bool, vllm: bool = False, corpus: tuple[str, ...] = (), vocab_size: int = 600,
                    max_pixels: int | None = None):
    from transformers import (Qwen2VLImageProcessor, Qwen3VLConfig, Qwen3VLForConditionalGeneration,
                              Qwen3VLProcessor, Qwen3VLVideoProcessor)
    tok = _train_tokenizer(SPECIAL_QWEN, "<|im_end|>", corpus, vocab_size)
    tok.chat_template = QWEN_TEMPLATE
    # patch 16, merge 2: one visual token per 32x32 pixels; the pixel budget caps the count.
    longest = max_pixels if max_pixels is not None else 1024 * 1024 if realistic else 64 * 64
    kw = dict(patch_size=16, temporal_patch_size=2, merge_size=2,
              size={"shortest_edge": 32 * 32, "longest_edge": longest},
              image_mean=[0.5] * 3, image_std=[0.5] * 3)
    processor = Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor(**kw), tokenizer=tok,
                                 video_processor=Qwen3VLVideoProcessor(**kw), chat_template=QWEN_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    config = Qwen3VLConfig(
        text_config=dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=VLLM_HEAD_DIM if vllm else 16,
                         max_position_embeddings=8192, pad_token_id=tok.pad_token_id,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                          "mrope_section": VLLM_MROPE_SECTION if vllm else [4, 2, 2],
                                          "mrope_interleaved": True},
                         initializer_range=INIT_RANGE),
        vision_config=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=16,
                           spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=64,
                           num_position_embeddings=64, deepstack_visual_indexes=[1],
                           initializer_range=INIT_RANGE),
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=False, initializer_range=INIT_RANGE,
    )
    return Qwen3VLForConditionalGeneration(config).eval(), processor


def _build_llava(realistic: bool, corpus: tuple[str, ...] = (), vocab_size: int = 600):
    from transformers import (CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor)
    tok = _train_tokenizer(SPECIAL_LLAVA, "<|im_end|>", corpus, vocab_size)
    tok.chat_template = LLAVA_TEMPLATE
    side, patch = (512, 16) if realistic else (32, 8)  # (side/patch)^2 visual tokens: 1024 or 16
    image_processor = CLIPImageProcessor(size={"shortest_edge": side}, crop_size={"height": side, "width": side},
                                         image_mean=[0.5] * 3, image_std=[0.5] * 3)
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tok, patch_size=patch,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=LLAVA_TEMPLATE, image_token="<image>")
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                              image_size=side, patch_size=patch, projection_dim=32,
                              initializer_range=INIT_RANGE)
    text = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
                       pad_token_id=tok.pad_token_id, bos_token_id=None, eos_token_id=tok.eos_token_id,
                       initializer_range=INIT_RANGE)
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_index=tok.convert_tokens_to_ids("<image>"),
                         image_seq_length=(side // patch) ** 2, vision_feature_select_strategy="default",
                         vision_feature_layer=-2, tie_word_embeddings=False, initializer_range=INIT_RANGE)
    return LlavaForConditionalGeneration(config).eval(), processor


def _install_yes_bias(model, processor, yes_ids: list[int], no_id: int, bias: float,
                      dim: int = 0, level: float = 1.0) -> None:
    """Hold residual dimension `dim` at `level` for text tokens and let the LM head read it
    only for the Yes/yes rows, calibrated on probe images so mean logit(" Yes") - logit(" No")
    after "Answer:" is `bias` (0 gives a positive rate near one half)."""
    import numpy as np
    import torch
    from PIL import Image
    lm = model.language_model if hasattr(model, "language_model") else model.model.language_model
    with torch.no_grad():
        lm.embed_tokens.weight[:, dim] = level
        for layer in lm.layers:  # nothing writes into the held dimension
            layer.self_attn.o_proj.weight[dim, :] = 0.0
            layer.mlp.down_proj.weight[dim, :] = 0.0
        head = model.lm_head.weight
        head[:, dim] = 0.0
        rng = np.random.default_rng(12345)
        sizes = [(32, 32), (64, 48), (48, 80), (40, 56), (64, 64), (56, 40)]
        probes = []
        for i, (w, h) in enumerate(sizes):  # one at a time: no padding to get wrong
            question = ("Is it red?", "Does the image show a car?")[i % 2]
            chat = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
            text = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False) + "Answer:"
            image = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            probes.append(processor(text=[text], images=[image], return_tensors="pt"))
        probe = yes_ids[0]  # " Yes": the token that follows "Answer:"

        def margin() -> torch.Tensor:
            logits = torch.stack([model(**inputs).logits[0, -1] for inputs in probes])
            return logits[:, probe] - logits[:, no_id]

        base = margin()
        head[probe, dim] = 1.0
        per_unit = margin() - base  # the held dimension after the final norm, per probe
        head[probe, dim] = 0.0
        head[sorted(set(yes_ids)), dim] = (bias - base.mean().item()) / per_unit.mean().item()
