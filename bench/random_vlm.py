"""TerraVis throughput on a random-weight Qwen3-VL at a real configuration, built on the device.

    python -m bench.random_vlm --config 8b --images 200 --size 1024 --positive-rate 0.3

No checkpoint is read or written: the model is constructed directly on the device (its
weights initialised there), and the processor is the tiny builder's (same patch 16, merge 2
and pixel budget as Qwen3-VL, so a 1024^2 image gives 1,024 visual tokens) with the model's
vocabulary padded to the real size. A random model's yes-rate is arbitrary, so
`--positive-rate` shifts the Yes logits to force that share of positive checks. Prints the
TerraVis benchmark's table, then images/s, prefill tokens/s and MFU of the default path.
`--config mini` builds a small random model the same way (a CPU dry run of this code).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any, Sequence

from . import bench_images

#: Qwen3-VL-8B-Instruct's published configuration (text and vision), vocabulary included.
CONFIGS = {
    "8b": dict(text=dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
                         num_key_value_heads=8, head_dim=128, vocab_size=151936),
               vision=dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16, out_hidden_size=4096,
                           num_position_embeddings=2304, deepstack_visual_indexes=[8, 16, 24]),
               mrope_section=[24, 20, 20]),
    "32b": dict(text=dict(hidden_size=5120, intermediate_size=25600, num_hidden_layers=64, num_attention_heads=64,
                          num_key_value_heads=8, head_dim=128, vocab_size=151936),
                vision=dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16, out_hidden_size=5120,
                            num_position_embeddings=2304, deepstack_visual_indexes=[8, 16, 24]),
                mrope_section=[24, 20, 20]),
    "mini": dict(text=dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                           num_key_value_heads=2, head_dim=32, vocab_size=4096),
                 vision=dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=2, out_hidden_size=128,
                             num_position_embeddings=64, deepstack_visual_indexes=[1]),
                 mrope_section=[8, 4, 4]),
}
#: bf16 dense matrix rate of an H200, measured on the lent machine.
PEAK_FLOPS = 790e12


def processor_with_realistic_tokens() -> Any:
    from transformers import AutoProcessor
    from vlmjudge.testing import build_tiny_vlm
    folder = build_tiny_vlm(tempfile.mkdtemp(prefix="vlmjudge-proc-") + "/p", image_tokens="realistic")
    return AutoProcessor.from_pretrained(folder)


def build_random_qwen3vl(name: str, processor: Any, device: str, dtype: Any) -> Any:
    """A Qwen3-VL of configuration `name` with random weights, constructed on `device`."""
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration
    spec = CONFIGS[name]
    tok = processor.tokenizer
    ids = tok.convert_tokens_to_ids
    if len(tok) > spec["text"]["vocab_size"]:
        raise ValueError("the processor's vocabulary is larger than the model's")
    config = Qwen3VLConfig(
        text_config=dict(**spec["text"], max_position_embeddings=262144, pad_token_id=tok.pad_token_id,
                         rope_parameters={"rope_type": "default", "rope_theta": 5000000.0,
                                          "mrope_section": spec["mrope_section"], "mrope_interleaved": True}),
        vision_config=dict(**spec["vision"], patch_size=16, spatial_merge_size=2, temporal_patch_size=2),
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=False)
    config._attn_implementation = "sdpa"
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Qwen3VLForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return model.eval()


def flops(model: Any, prefill: int, generated: int, images: int, patches_per_image: int) -> float:
    """Matrix FLOPs of what ran: 2 x text-layer parameters per token run (prefill, shared prefix
    counted once, and generated), vision tower parameters and attention per image encoded.
    The LM head (last position only) and text attention (~2% at these lengths) are left out."""
    lm = model.model.language_model
    text = sum(p.numel() for n, p in lm.named_parameters() if not n.startswith("embed_tokens"))
    vis = sum(p.numel() for p in model.model.visual.parameters())
    vcfg = model.config.vision_config
    vision_attention = 4 * vcfg.depth * patches_per_image ** 2 * vcfg.hidden_size
    return 2.0 * text * (prefill + generated) + images * (2.0 * vis * patches_per_image + vision_attention)


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    from .terravis_paths import run
    from .terravis_setup import bench_pack, force_positive_rate, make_all_eligible
    p = argparse.ArgumentParser(prog="python -m bench.random_vlm", description=__doc__.splitlines()[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="8b")
    p.add_argument("--images", type=int, default=200)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--positive-rate", type=float, default=0.3)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--kv-cache-mb", type=float, default=None,
                   help="prefix KV store budget in MiB (default: the backend's; a block of 32 Qwen3-VL-8B "
                        "images at 1024^2 keeps about 20 GiB of image prefixes between its stages)")
    p.add_argument("--reference-images", type=int, default=8,
                   help="images for the reference path and the equality check (it is ~6x slower)")
    args = p.parse_args(argv)
    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    start = time.perf_counter()
    processor = processor_with_realistic_tokens()
    model = build_random_qwen3vl(args.config, processor, args.device, dtype)
    print(f"built {args.config} ({sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters) on "
          f"{args.device} in {time.perf_counter() - start:.1f} s")
    images = bench_images(args.images, args.size)
    make_all_eligible(model, processor)
    shift = force_positive_rate(model, processor, images, args.positive_rate)
    header = [f"pack {bench_pack().version}; Yes logits shifted by {shift.shift:+.3f} for ~{args.positive_rate}"]
    if args.reference_images:  # equality and speedup on a subset, side by side
        run(model, processor, images[:args.reference_images], batch_size=args.batch_size, ablation_images=0,
            header=header, kv_cache_mb=args.kv_cache_mb)
    measures = run(model, processor, images, batch_size=args.batch_size, ablation_images=0, reference=False,
                   steps=False, header=header, kv_cache_mb=args.kv_cache_mb)
    opt = measures["optimized"]
    patches = (args.size // 16) ** 2
    total = flops(model, opt.prefill_tokens, opt.generated_tokens, opt.images_encoded, patches)
    print(f"default path on {args.images} images: {opt.images_per_s:.2f} images/s, "
          f"{opt.prefill_tokens / opt.seconds:,.0f} prefill tokens/s, {total / opt.seconds / 1e12:.1f} TFLOP/s, "
          f"MFU {total / opt.seconds / PEAK_FLOPS:.1%} of {PEAK_FLOPS / 1e12:.0f} TFLOP/s bf16")
    print(f"FLOPs counted: {total / 1e12:.1f} T over {opt.seconds:.1f} s: {opt.prefill_tokens:,} prefill tokens run "
          f"(prefixes served by the KV store not counted), {opt.generated_tokens:,} generated, "
          f"{opt.images_encoded} images through the vision tower")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
