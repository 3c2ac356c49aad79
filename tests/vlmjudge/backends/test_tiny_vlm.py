"""The tiny checkpoint builder: loads through the Auto classes, single-token options, yes_bias."""
import math

import pytest
import torch

from vlmjudge import Request
from vlmjudge.backends.hf.judge import TransformersJudge
from vlmjudge.testing import build_tiny_vlm
from vlmjudge.testing.tiny_vlm import OPTION_WORDS


@pytest.mark.parametrize("family", ["qwen3_vl", "llava"])
def test_option_words_are_single_tokens_both_ways(loaded, family):
    """The tiny tokenizers keep every option word one token after "Answer:" and after a newline;
    a word split in pieces is still an option (scored whole), one that starts another is not."""
    judge = loaded[family]
    for tail in ("Answer:", "Answer:\n"):
        assert all(len(ids) == 1 for ids in judge.option_sequences(tail, OPTION_WORDS).values())
    judge.validate_options(["Yes", "Certainly not"])
    assert len(judge.option_sequences("Answer:", ["Yes", "Certainly not"])["Certainly not"]) > 1
    with pytest.raises(ValueError, match="begins another"):
        judge.validate_options(["Yes", "Yes indeed"])


@pytest.mark.parametrize("family", ["qwen3_vl", "llava"])
def test_yes_bias_sets_the_mean_yes_margin(tmp_path, family, noise):
    """Mean log P(Yes)/P(No) after "Answer:" lands near the requested bias."""
    imgs = noise(8)
    margin = {}
    for bias in (-3.0, 3.0):
        judge = TransformersJudge(build_tiny_vlm(tmp_path / f"{family}{bias}", family=family, yes_bias=bias))
        reqs = [Request(images=[im], text="Is there a dog?", prefix="Answer:") for im in imgs]
        probs = judge.choice_probs(reqs, ["Yes", "No"])
        margin[bias] = sum(math.log(p["Yes"] / p["No"]) for p in probs) / len(probs)
        assert abs(margin[bias] - bias) < 1.5
    assert 4.5 < margin[3.0] - margin[-3.0] < 7.5


def test_realistic_image_tokens(tmp_path):
    """A 1024x1024 image gives 1024 visual tokens, as a real Qwen3-VL does."""
    from PIL import Image
    from transformers import AutoProcessor
    path = build_tiny_vlm(tmp_path / "big", image_tokens="realistic")
    processor = AutoProcessor.from_pretrained(path)
    assert hasattr(processor, "image_processor")
    pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    inputs = processor(text=["<|vision_start|><|image_pad|><|vision_end|>x"],
                       images=[Image.new("RGB", (1024, 1024))], return_tensors="pt")
    assert int((inputs["input_ids"] == pad).sum()) == 1024


def test_llava_realistic_image_tokens(tmp_path):
    from PIL import Image
    from transformers import AutoProcessor
    path = build_tiny_vlm(tmp_path / "llava_big", family="llava", image_tokens="realistic")
    processor = AutoProcessor.from_pretrained(path)
    image_id = processor.tokenizer.convert_tokens_to_ids("<image>")
    inputs = processor(text=["<image>\nx"], images=[Image.new("RGB", (300, 200))], return_tensors="pt")
    assert int((inputs["input_ids"] == image_id).sum()) == 1024


def test_bad_arguments():
    with pytest.raises(ValueError, match="family"):
        build_tiny_vlm("unused", family="gpt")
    with pytest.raises(ValueError, match="image_tokens"):
        build_tiny_vlm("unused", image_tokens="huge")


def test_same_seed_same_weights(tmp_path):
    from safetensors.torch import load_file
    a = load_file(f"{build_tiny_vlm(tmp_path / 'a', seed=3)}/model.safetensors")
    b = load_file(f"{build_tiny_vlm(tmp_path / 'b', seed=3)}/model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
