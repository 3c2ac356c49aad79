"""`vllm=True` builders: checkpoints whose text attention has a head size vLLM's CPU build runs
(it refuses 16, the default tiny size), loading and answering through `from_pretrained`."""
import pytest
import torch
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor

from vlmjudge.testing import build_tiny_family
from vlmjudge.testing.tiny_families import VLLM_FAMILIES

#: Head sizes vLLM 0.32's CPU attention accepts.
VLLM_CPU_HEAD_SIZES = {32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512}


def text_head_dim(text_config) -> int:
    return getattr(text_config, "head_dim", None) or text_config.hidden_size // text_config.num_attention_heads


@pytest.mark.parametrize("family", VLLM_FAMILIES)
def test_vllm_build_loads_with_a_supported_head_size(tmp_path, family):
    path = build_tiny_family(family, tmp_path / family, vllm=True)
    model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32).eval()
    processor = AutoProcessor.from_pretrained(path)
    text = model.config.text_config
    head = text_head_dim(text)
    assert head in VLLM_CPU_HEAD_SIZES
    assert sum(text.rope_parameters["mrope_section"]) == head // 2
    attention = model.model.language_model.layers[0].self_attn
    assert attention.q_proj.out_features == head * text.num_attention_heads  # the weights have that shape
    chat = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Is it red?"}]}]
    prompt = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False) + "Answer:"
    inputs = processor(text=[prompt], images=[Image.new("RGB", (48, 40), "red")], return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs).logits[0, -1]
    assert torch.isfinite(logits).all() and logits.std() > 0


def test_default_build_keeps_the_small_head(tmp_path):
    path = build_tiny_family("qwen2_5_vl", tmp_path / "q")
    from transformers import AutoConfig
    assert text_head_dim(AutoConfig.from_pretrained(path).text_config) == 16


def test_vllm_is_refused_for_a_family_it_does_not_build(tmp_path):
    with pytest.raises(ValueError, match="vllm=True builds"):
        build_tiny_family("gemma3", tmp_path / "g", vllm=True)
