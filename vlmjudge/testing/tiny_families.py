"""Tiny random checkpoints of every open judge family the backend supports, built offline.

`build_tiny_family(family, path)` writes a checkpoint of ~0.2 M parameters with the family's
real config, model and processor classes, its image placeholder tokens, and a chat template
that puts images where the family's real template does; it loads through `AutoProcessor` +
`AutoModelForImageTextToText` like a Hub checkpoint. `sliding_window` (Gemma 3/4, Mistral 3)
and `attention_chunk` (Llama 4) set a short attention window, so tests can run prompts longer
than it. Images stay at 4-64 visual tokens, so a forward takes milliseconds on a CPU.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from . import _tiny_parts as parts
from .tiny_vlm import INIT_RANGE, SPECIAL_QWEN, QWEN_TEMPLATE, VLLM_HEAD_DIM, VLLM_MROPE_SECTION, build_tiny_vlm

_IMAGE_BOX = "<|vision_start|><|image_pad|><|vision_end|>"


def _ids(tok) -> Callable[[str], int]:
    return tok.convert_tokens_to_ids


# -- Qwen-VL family: patch 16, merge 2, one visual token per 32x32 pixels ---------------------
def _merge2_processor(processor_cls: Any, image_cls: Any, video_cls: Any, tok: Any, template: str):
    """The processor of a patch-16, merge-2 family (Qwen-VL, GLM-4.1V): images and videos of
    32x32 to 64x64 pixels."""
    sizes = dict(patch_size=16, temporal_patch_size=2, merge_size=2,
                 size={"shortest_edge": 32 * 32, "longest_edge": 64 * 64}, **parts.UNIT_NORM)
    return processor_cls(image_processor=image_cls(**sizes), tokenizer=tok, video_processor=video_cls(**sizes),
                         chat_template=template)


def _qwen_processor(processor_cls: Any, video_cls: Any):
    from transformers import Qwen2VLImageProcessor
    tok = parts.train_tokenizer(SPECIAL_QWEN, "<|im_end|>")
    tok.chat_template = QWEN_TEMPLATE
    processor = _merge2_processor(processor_cls, Qwen2VLImageProcessor, video_cls, tok, QWEN_TEMPLATE)
    ids = _ids(tok)
    markers = dict(image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
                   vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"))
    return processor, tok, markers


def _mrope(sections: list[int], **extra: Any) -> dict[str, Any]:
    return {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": sections, **extra}


def _qwen_family(classes: str, vision: dict[str, Any], rope: dict[str, Any], *, head_dim: bool = True,
                 **text_extra: Any):
    """A Qwen-VL family model and processor: `classes` names the transformers config, model,
    processor and video processor classes; `head_dim=False` for text towers that derive it
    from the width. Built in one order (tokenizer, configs, then the model), so a seed fixes it."""
    import transformers
    config_cls, model_cls, processor_cls, video_cls = (getattr(transformers, name) for name in classes.split())
    processor, tok, markers = _qwen_processor(processor_cls, video_cls)
    text = parts.text_config(tok, rope_parameters=rope, **text_extra)
    if not head_dim:
        del text["head_dim"]
    config = config_cls(text_config=text, vision_config=vision, tie_word_embeddings=False,
                        initializer_range=INIT_RANGE, **markers)
    return model_cls(config), processor


#: Qwen3-VL's tower: a square number of position embeddings, a deepstack index below the depth.
_QWEN3_VISION = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=16, spatial_merge_size=2,
                     temporal_patch_size=2, out_hidden_size=64, num_position_embeddings=64,
                     deepstack_visual_indexes=[1], initializer_range=INIT_RANGE)


def _qwen2_heads(vllm: bool) -> dict[str, Any]:
    """Qwen2 text towers derive head_dim from width / heads: 64 / 4 = 16, or 64 / 2 = 32 and
    M-RoPE sections to match when the checkpoint is for vLLM."""
    if not vllm:
        return dict(rope=_mrope([4, 2, 2]))
    heads = 64 // VLLM_HEAD_DIM
    return dict(rope=_mrope(VLLM_MROPE_SECTION), num_attention_heads=heads, num_key_value_heads=heads)


def qwen2_vl(vllm: bool = False):
    vision = dict(depth=2, embed_dim=32, hidden_size=64, mlp_ratio=2, num_heads=2, patch_size=16,
                  spatial_merge_size=2, temporal_patch_size=2, initializer_range=INIT_RANGE)
    heads = _qwen2_heads(vllm)
    return _qwen_family("Qwen2VLConfig Qwen2VLForConditionalGeneration Qwen2VLProcessor Qwen2VLVideoProcessor",
                        vision, heads.pop("rope"), head_dim=False, **heads)


def qwen2_5_vl(vllm: bool = False):
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=16, spatial_merge_size=2,
                  temporal_patch_size=2, out_hidden_size=64, window_size=64, fullatt_block_indexes=[1],
                  initializer_range=INIT_RANGE)
    heads = _qwen2_heads(vllm)
    return _qwen_family("Qwen2_5_VLConfig Qwen2_5_VLForConditionalGeneration Qwen2_5_VLProcessor "
                        "Qwen2VLVideoProcessor", vision, heads.pop("rope"), head_dim=False, **heads)


def qwen3_vl_moe():
    return _qwen_family("Qwen3VLMoeConfig Qwen3VLMoeForConditionalGeneration Qwen3VLProcessor Qwen3VLVideoProcessor",
                        _QWEN3_VISION, _mrope([4, 2, 2], mrope_interleaved=True), moe_intermediate_size=32,
                        num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1)


def qwen3_5():
    """Hybrid: one linear-attention (recurrent) layer, one full-attention layer."""
    vision = {k: v for k, v in _QWEN3_VISION.items() if k != "deepstack_visual_indexes"}
    return _qwen_family("Qwen3_5Config Qwen3_5ForConditionalGeneration Qwen3VLProcessor Qwen3VLVideoProcessor",
                        vision, _mrope([2, 1, 1], mrope_interleaved=True, partial_rotary_factor=0.5),
                        layer_types=["linear_attention", "full_attention"], linear_conv_kernel_dim=4,
                        linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
                        linear_num_value_heads=4)


def glm4v():
    from transformers import (Glm4vConfig, Glm4vForConditionalGeneration, Glm4vImageProcessor, Glm4vProcessor,
                              Glm4vVideoProcessor)
    special = ["[gMASK]", "<sop>", "<|user|>", "<|assistant|>", "<|system|>", "<|endoftext|>", "<|begin_of_image|>",
               "<|end_of_image|>", "<|image|>", "<|begin_of_video|>", "<|end_of_video|>", "<|video|>"]
    tok = parts.train_tokenizer(special, "<|user|>")
    # GLM-4.1V: "[gMASK]<sop><|user|>\n<|begin_of_image|><|image|><|end_of_image|>text<|assistant|>\n"
    opens, closes = parts.turns("<|{role}|>\n", "")
    template = parts.chat_template(start="[gMASK]<sop>", opens=opens, closes=closes,
                                   image="<|begin_of_image|><|image|><|end_of_image|>", generation="<|assistant|>\n")
    tok.chat_template = template
    processor = _merge2_processor(Glm4vProcessor, Glm4vImageProcessor, Glm4vVideoProcessor, tok, template)
    ids = _ids(tok)
    text = parts.text_config(tok, rope_parameters=_mrope([2, 1, 1], partial_rotary_factor=0.5),
                             eos_token_id=tok.eos_token_id)
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, image_size=64, patch_size=16,
                  spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=64, initializer_range=INIT_RANGE)
    config = Glm4vConfig(text_config=text, vision_config=vision, image_token_id=ids("<|image|>"),
                         video_token_id=ids("<|video|>"), image_start_token_id=ids("<|begin_of_image|>"),
                         image_end_token_id=ids("<|end_of_image|>"), video_start_token_id=ids("<|begin_of_video|>"),
                         video_end_token_id=ids("<|end_of_video|>"), tie_word_embeddings=False)
    return Glm4vForConditionalGeneration(config), processor


# -- Gemma: images as one marker in place, expanded by the processor --------------------------
def gemma3(sliding_window: int = 512):
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3ImageProcessor, Gemma3Processor
    special = ["<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>", "<image_soft_token>", "<bos>"]
    named = {"image_token": "<image_soft_token>", "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>"}
    tok = parts.train_tokenizer(special, "<end_of_turn>", named=named, bos="<bos>")
    # the processor expands "<start_of_image>" to "\n\n<start_of_image><image_soft_token>*N<end_of_image>\n\n"
    opens, closes = parts.turns("<start_of_turn>{role}\n", "<end_of_turn>\n", {"assistant": "model"})
    template = parts.chat_template(start="{{ bos_token }}", opens=opens, closes=closes, image="<start_of_image>",
                                   generation="<start_of_turn>model\n")
    tok.chat_template = template
    # 32x32 pixels, patch 8: 16 patches pooled to 4 soft tokens per image
    image_processor = Gemma3ImageProcessor(size={"height": 32, "width": 32}, **parts.UNIT_NORM)
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tok, chat_template=template,
                                image_seq_length=4)
    ids = _ids(tok)
    text = parts.text_config(tok, hidden_activation="gelu_pytorch_tanh", sliding_window=sliding_window,
                             layer_types=["sliding_attention", "full_attention"], query_pre_attn_scalar=16,
                             bos_token_id=ids("<bos>"), eos_token_id=tok.eos_token_id)
    vision = parts.vision_config(image_size=32, patch_size=8, vision_use_head=False)
    config = Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4,
                          image_token_index=ids("<image_soft_token>"), boi_token_index=ids("<start_of_image>"),
                          eoi_token_index=ids("<end_of_image>"), tie_word_embeddings=False,
                          initializer_range=INIT_RANGE)
    return Gemma3ForConditionalGeneration(config), processor


def gemma4(sliding_window: int = 512):
    from transformers import (Gemma4AudioFeatureExtractor, Gemma4Config, Gemma4ForConditionalGeneration,
                              Gemma4ImageProcessor, Gemma4Processor, Gemma4VideoProcessor)
    special = ["<|turn>", "<turn|>", "<|image|>", "<|image>", "<image|>", "<|audio|>", "<|audio>", "<audio|>",
               "<|video|>", "<bos>"]
    named = {"image_token": "<|image|>", "boi_token": "<|image>", "eoi_token": "<image|>",
             "audio_token": "<|audio|>", "boa_token": "<|audio>", "eoa_token": "<audio|>"}
    tok = parts.train_tokenizer(special, "<turn|>", named=named, bos="<bos>")
    opens, closes = parts.turns("<|turn>{role}\n", "<turn|>\n", {"assistant": "model"})
    template = parts.chat_template(start="{{ bos_token }}", opens=opens, closes=closes, image="<|image|>",
                                   generation="<|turn>model\n")
    tok.chat_template = template
    pooling = dict(patch_size=8, pooling_kernel_size=2, max_soft_tokens=70)
    processor = Gemma4Processor(feature_extractor=Gemma4AudioFeatureExtractor(),
                                image_processor=Gemma4ImageProcessor(**pooling), tokenizer=tok,
                                video_processor=Gemma4VideoProcessor(**pooling), chat_template=template,
                                image_seq_length=70)
    ids = _ids(tok)
    text = parts.text_config(tok, hidden_activation="gelu_pytorch_tanh", sliding_window=sliding_window,
                             layer_types=["sliding_attention", "full_attention"], hidden_size_per_layer_input=16,
                             vocab_size_per_layer_input=len(tok), global_head_dim=16, bos_token_id=ids("<bos>"),
                             eos_token_id=tok.eos_token_id, use_bidirectional_attention="vision",
                             tie_word_embeddings=False)
    vision = parts.vision_config(num_key_value_heads=2, head_dim=16, patch_size=8, pooling_kernel_size=2,
                                 position_embedding_size=64)
    config = Gemma4Config(text_config=text, vision_config=vision, audio_config=None,
                          image_token_id=ids("<|image|>"), boi_token_id=ids("<|image>"), eoi_token_id=ids("<image|>"),
                          video_token_id=ids("<|video|>"), audio_token_id=ids("<|audio|>"),
                          boa_token_id=ids("<|audio>"), eoa_token_index=ids("<audio|>"),
                          tie_word_embeddings=False, initializer_range=INIT_RANGE)
    return Gemma4ForConditionalGeneration(config), processor


# -- tiled images: InternVL, Idefics3 / SmolVLM, LLaVA-OneVision, Pixtral, Llama 4 ------------
def _qwen_turns_with_image(image: str) -> str:
    opens, closes = parts.turns("<|im_start|>{role}\n", "<|im_end|>\n")
    return parts.chat_template(opens=opens, closes=closes, image=image, generation="<|im_start|>assistant\n")


def internvl():
    from transformers import (GotOcr2ImageProcessor, InternVLConfig, InternVLForConditionalGeneration,
                              InternVLProcessor, InternVLVideoProcessor)
    special = ["<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<video>"]
    named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
             "video_token": "<video>"}
    tok = parts.train_tokenizer(special, "<|im_end|>", named=named)
    template = _qwen_turns_with_image("<IMG_CONTEXT>\n")  # InternVL3-hf: Qwen turns, the image marker in place
    tok.chat_template = template
    # 32x32 tiles (1-4 of them), patch 8 -> 16 patches, pixel shuffle 0.5 -> 4 tokens per tile
    image_processor = GotOcr2ImageProcessor(size={"height": 32, "width": 32}, crop_to_patches=True, min_patches=1,
                                            max_patches=4, **parts.UNIT_NORM)
    processor = InternVLProcessor(image_processor=image_processor, tokenizer=tok, image_seq_length=4,
                                  video_processor=InternVLVideoProcessor(size={"height": 32, "width": 32}),
                                  chat_template=template)
    text = parts.text_config(tok, model_type="qwen2", eos_token_id=tok.eos_token_id)
    vision = parts.vision_config(image_size=[32, 32], patch_size=[8, 8])
    config = InternVLConfig(vision_config=vision, text_config=text, image_token_id=_ids(tok)("<IMG_CONTEXT>"),
                            image_seq_length=4, downsample_ratio=0.5, tie_word_embeddings=False,
                            initializer_range=INIT_RANGE)
    return InternVLForConditionalGeneration(config), processor


def _idefics_parts(bos: str):
    grid = [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
    special = [bos, "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>", "<image>", "<global-img>",
               "<video>", *grid]
    tok = parts.train_tokenizer(special, "<end_of_utterance>", bos=bos)
    # Idefics3 / SmolVLM: "<bos>User:<image>question<end_of_utterance>\nAssistant:"
    opens = {r: r.capitalize() + ":" for r in parts.ROLES}
    closes = {r: "<end_of_utterance>\n" for r in parts.ROLES}
    tok.chat_template = parts.chat_template(start=bos, opens=opens, closes=closes, image="<image>",
                                            generation="Assistant:")
    # tiles of 32x32 (4 tokens each after pixel shuffle 2), up to 2x2 tiles plus the global image
    sizes = dict(size={"longest_edge": 64}, max_image_size={"longest_edge": 32}, **parts.UNIT_NORM)
    text = parts.text_config(tok, model_type="llama", eos_token_id=tok.eos_token_id)
    vision = parts.vision_config(image_size=32, patch_size=8)
    return tok, sizes, dict(vision_config=vision, text_config=text, scale_factor=2,
                            image_token_id=_ids(tok)("<image>"), tie_word_embeddings=False,
                            initializer_range=INIT_RANGE)


def idefics3():
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor, Idefics3Processor
    tok, sizes, config = _idefics_parts("<|begin_of_text|>")
    processor = Idefics3Processor(image_processor=Idefics3ImageProcessor(do_image_splitting=True, **sizes),
                                  tokenizer=tok, image_seq_len=4, chat_template=tok.chat_template)
    return Idefics3ForConditionalGeneration(Idefics3Config(**config)), processor


def smolvlm():
    """SmolVLM's processor needs the `num2words` package."""
    from transformers import (SmolVLMConfig, SmolVLMForConditionalGeneration, SmolVLMImageProcessor,
                              SmolVLMProcessor, SmolVLMVideoProcessor)
    tok, sizes, config = _idefics_parts("<|im_start|>")
    processor = SmolVLMProcessor(image_processor=SmolVLMImageProcessor(do_image_splitting=True, **sizes),
                                 tokenizer=tok, video_processor=SmolVLMVideoProcessor(**sizes), image_seq_len=4,
                                 chat_template=tok.chat_template)
    return SmolVLMForConditionalGeneration(SmolVLMConfig(**config)), processor


def llava_onevision():
    from transformers import (LlavaOnevisionConfig, LlavaOnevisionForConditionalGeneration,
                              LlavaOnevisionImageProcessor, LlavaOnevisionProcessor, LlavaOnevisionVideoProcessor)
    tok = parts.train_tokenizer(["<|im_start|>", "<|im_end|>", "<image>", "<video>"], "<|im_end|>")
    template = _qwen_turns_with_image("<image>\n")  # llava-onevision-qwen2
    tok.chat_template = template
    pinpoints = [[32, 32], [32, 64], [64, 32], [64, 64]]  # anyres tilings: 1-4 tiles of 32x32 + the base image
    image_processor = LlavaOnevisionImageProcessor(size={"height": 32, "width": 32}, image_grid_pinpoints=pinpoints,
                                                   **parts.UNIT_NORM)
    processor = LlavaOnevisionProcessor(image_processor=image_processor, tokenizer=tok, num_image_tokens=16,
                                        video_processor=LlavaOnevisionVideoProcessor(size={"height": 32, "width": 32}),
                                        vision_feature_select_strategy="full", chat_template=template,
                                        vision_aspect_ratio="anyres_max_9")
    text = parts.text_config(tok, model_type="qwen2", eos_token_id=tok.eos_token_id)
    del text["head_dim"]
    vision = parts.vision_config(model_type="siglip_vision_model", image_size=32, patch_size=8, vision_use_head=False)
    ids = _ids(tok)
    config = LlavaOnevisionConfig(vision_config=vision, text_config=text, image_token_index=ids("<image>"),
                                  video_token_index=ids("<video>"), image_grid_pinpoints=pinpoints,
                                  vision_feature_select_strategy="full", vision_feature_layer=-1,
                                  vision_aspect_ratio="anyres_max_9", tie_word_embeddings=False,
                                  initializer_range=INIT_RANGE)
    return LlavaOnevisionForConditionalGeneration(config), processor


def mistral3(sliding_window: int | None = None):
    from transformers import Mistral3Config, Mistral3ForConditionalGeneration, PixtralImageProcessor, PixtralProcessor
    special = ["<s>", "</s>", "[INST]", "[/INST]", "[IMG]", "[IMG_BREAK]", "[IMG_END]", "[SYSTEM_PROMPT]",
               "[/SYSTEM_PROMPT]"]
    tok = parts.train_tokenizer(special, "</s>", bos="<s>")
    # Mistral-Small-3.1: "<s>[SYSTEM_PROMPT]..[/SYSTEM_PROMPT][INST]" + text and "[IMG]" in order + "[/INST]"
    template = parts.chat_template(start="{{ bos_token }}", image="[IMG]", generation="",
                                   opens={"system": "[SYSTEM_PROMPT]", "user": "[INST]"},
                                   closes={"system": "[/SYSTEM_PROMPT]", "user": "[/INST]", "assistant": "</s>"})
    tok.chat_template = template
    # patch 8, merge 2: one token per 16x16 pixels, longest edge 64, a row break after each row
    image_processor = PixtralImageProcessor(patch_size={"height": 8, "width": 8}, size={"longest_edge": 64},
                                            **parts.UNIT_NORM)
    processor = PixtralProcessor(image_processor=image_processor, tokenizer=tok, patch_size=8, spatial_merge_size=2,
                                 chat_template=template)
    text = parts.text_config(tok, model_type="mistral", eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id,
                             sliding_window=sliding_window)
    vision = parts.vision_config(head_dim=16, image_size=64, patch_size=8)
    config = Mistral3Config(vision_config=vision, text_config=text, image_token_index=_ids(tok)("[IMG]"),
                            spatial_merge_size=2, vision_feature_layer=-1, tie_word_embeddings=False,
                            initializer_range=INIT_RANGE)
    return Mistral3ForConditionalGeneration(config), processor


def llama4(attention_chunk: int = 8192):
    from transformers import Llama4Config, Llama4ForConditionalGeneration, Llama4ImageProcessor, Llama4Processor
    special = ["<|begin_of_text|>", "<|header_start|>", "<|header_end|>", "<|eot|>", "<|image|>", "<|image_start|>",
               "<|image_end|>", "<|patch|>", "<|tile_x_separator|>", "<|tile_y_separator|>"]
    tok = parts.train_tokenizer(special, "<|eot|>", bos="<|begin_of_text|>")
    # "<|begin_of_text|><|header_start|>user<|header_end|>\n\n" + "<|image|>" in place + text + "<|eot|>"
    opens, closes = parts.turns("<|header_start|>{role}<|header_end|>\n\n", "<|eot|>")
    template = parts.chat_template(start="{{ bos_token }}", opens=opens, closes=closes, image="<|image|>",
                                   generation="<|header_start|>assistant<|header_end|>\n\n")
    tok.chat_template = template
    processor = Llama4Processor(image_processor=Llama4ImageProcessor(size={"height": 32, "width": 32}, max_patches=4),
                                tokenizer=tok, patch_size=8, pixel_shuffle_ratio=0.5, chat_template=template)
    ids = _ids(tok)
    text = parts.text_config(tok, intermediate_size=64, intermediate_size_mlp=128, num_local_experts=2,
                             num_experts_per_tok=1, interleave_moe_layer_step=2, attention_chunk_size=attention_chunk,
                             no_rope_layer_interval=2, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    vision = parts.vision_config(intermediate_size=128, image_size=32, patch_size=8, vision_output_dim=32,
                                 projector_input_dim=32, projector_output_dim=32, pixel_shuffle_ratio=0.5)
    config = Llama4Config(vision_config=vision, text_config=text, image_token_index=ids("<|patch|>"),
                          boi_token_index=ids("<|image_start|>"), eoi_token_index=ids("<|image_end|>"),
                          tie_word_embeddings=False)
    return Llama4ForConditionalGeneration(config), processor


_BUILDERS: dict[str, Callable[..., tuple[Any, Any]]] = {
    "qwen2_vl": qwen2_vl, "qwen2_5_vl": qwen2_5_vl, "qwen3_vl_moe": qwen3_vl_moe, "qwen3_5": qwen3_5,
    "glm4v": glm4v, "gemma3": gemma3, "gemma4": gemma4, "internvl": internvl, "idefics3": idefics3,
    "smolvlm": smolvlm, "llava_onevision": llava_onevision, "mistral3": mistral3, "llama4": llama4,
}
#: Every family `build_tiny_family` builds (qwen3_vl and llava come from `build_tiny_vlm`).
FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "gemma3", "gemma4", "llava",
            "llava_onevision", "idefics3", "smolvlm", "internvl", "mistral3", "llama4", "glm4v")
#: Families `vllm=True` builds with a text head size vLLM's CPU attention runs (see `VLLM_HEAD_DIM`).
VLLM_FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")
#: Families with a sliding window / an attention chunk, and the builder argument that sets it.
WINDOWED = {"gemma3": "sliding_window", "gemma4": "sliding_window", "mistral3": "sliding_window",
            "llama4": "attention_chunk"}


def build_tiny_family(family: str, path: str | os.PathLike, *, sliding_window: int | None = None,
                      attention_chunk: int | None = None, seed: int = 0, vllm: bool = False) -> str:
    """Write a tiny random checkpoint of `family` to `path` (replaced) and return the path;
    `vllm=True` (a family of `VLLM_FAMILIES`) for one vLLM's CPU build can serve."""
    import torch
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    window = {"sliding_window": sliding_window, "attention_chunk": attention_chunk}
    asked = {k: v for k, v in window.items() if v is not None}
    if asked and (len(asked) > 1 or WINDOWED.get(family) != next(iter(asked))):
        raise ValueError(f"{family} takes {WINDOWED.get(family) or 'no window option'}, not {', '.join(asked)}")
    if vllm and family not in VLLM_FAMILIES:
        raise ValueError(f"vllm=True builds {', '.join(VLLM_FAMILIES)}, not {family}")
    if family in ("qwen3_vl", "llava"):
        return build_tiny_vlm(path, family=family, seed=seed, vllm=vllm)
    if vllm:
        asked["vllm"] = True
    torch.manual_seed(seed)
    model, processor = _BUILDERS[family](**asked)
    _randomize_zero_matrices(model)
    return parts.save(model.eval(), processor, os.fspath(path))


def _randomize_zero_matrices(model: Any) -> None:
    """Draw the matrices a family initialises to zero (Gemma 3's image projection, InternVL's
    position embeddings) at random too: a zero projection would hide the image from the text
    model, and tests comparing images would compare nothing."""
    import torch
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() >= 2 and not bool(param.any()):
                param.normal_(0.0, INIT_RANGE)
