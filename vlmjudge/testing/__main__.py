"""`python -m vlmjudge.testing KIND OUT_DIR`: build a tiny random checkpoint offline.

KIND is a vision-language family (qwen2_vl, qwen2_5_vl, qwen3_vl, qwen3_vl_moe, qwen3_5, gemma3,
gemma4, llava, llava_onevision, idefics3, smolvlm, internvl, mistral3, llama4, glm4v), clip,
dinov2, siglip, text_to_image (a diffusers pipeline) or image_edit (an InstructPix2Pix-style
diffusers pipeline), or demo (a tiny Qwen3-VL judge calibrated to give a mix of outcomes in
every method: the one README's offline commands use). `--sliding-window N` (gemma3, gemma4,
mistral3) or `--attention-chunk N` (llama4) sets a short attention window. `--hub-id ORG/NAME` also installs it
into the Hugging Face cache at a fake commit, so it loads by Hub id offline. `--vllm` (qwen2_vl,
qwen2_5_vl, qwen3_vl) builds text attention with a head size vLLM's CPU build runs.
"""
from __future__ import annotations

import argparse
import sys

from . import (build_tiny_clip, build_tiny_dinov2, build_tiny_family, build_tiny_image_edit, build_tiny_siglip,
               build_tiny_text_to_image, build_tiny_vlm, install_in_hf_cache)
from .demo import build_demo_judge
from .tiny_families import FAMILIES, VLLM_FAMILIES, WINDOWED

BUILDERS = {
    "qwen3_vl": lambda out, a: build_tiny_vlm(out, family="qwen3_vl", image_tokens=a.image_tokens, yes_bias=a.yes_bias,
                                              vllm=a.vllm),
    "llava": lambda out, a: build_tiny_vlm(out, family="llava", yes_bias=a.yes_bias),
    "clip": lambda out, a: build_tiny_clip(out),
    "dinov2": lambda out, a: build_tiny_dinov2(out),
    "siglip": lambda out, a: build_tiny_siglip(out),
    "text_to_image": lambda out, a: build_tiny_text_to_image(out),
    "image_edit": lambda out, a: build_tiny_image_edit(out),
    "demo": lambda out, a: build_demo_judge(out),
}
for _family in FAMILIES:  # qwen3_vl and llava keep their realistic-size and yes-bias options
    BUILDERS.setdefault(_family, lambda out, a, f=_family: build_tiny_family(
        f, out, sliding_window=a.sliding_window, attention_chunk=a.attention_chunk, vllm=a.vllm))

#: Optional dependency (the missing module's name) -> the extra that installs it.
OPTIONAL_EXTRAS = {"diffusers": "diffusers"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlmjudge.testing", description=__doc__)
    parser.add_argument("kind", choices=sorted(BUILDERS))
    parser.add_argument("out")
    parser.add_argument("--image-tokens", default=None, choices=[None, "realistic"],
                        help="'realistic': a 1024x1024 image gives ~1024 visual tokens, as Qwen3-VL")
    parser.add_argument("--yes-bias", type=float, default=0.0, help="logit bias on 'Yes' (sets a positive rate)")
    parser.add_argument("--sliding-window", type=int, default=None, help="sliding window (gemma3, gemma4, mistral3)")
    parser.add_argument("--attention-chunk", type=int, default=None, help="attention chunk (llama4)")
    parser.add_argument("--vllm", action="store_true",
                        help=f"text head size vLLM's CPU attention runs ({', '.join(VLLM_FAMILIES)})")
    parser.add_argument("--hub-id", default=None, help="also install into the HF cache as ORG/NAME")
    args = parser.parse_args(argv)
    if (args.sliding_window is not None or args.attention_chunk is not None) and args.kind not in WINDOWED:
        parser.error(f"{args.kind} takes no --sliding-window / --attention-chunk")  # never ignored silently
    if args.vllm and args.kind not in VLLM_FAMILIES:
        parser.error(f"--vllm builds {', '.join(VLLM_FAMILIES)}, not {args.kind}")
    try:
        path = BUILDERS[args.kind](args.out, args)
    except ModuleNotFoundError as exc:
        if exc.name not in OPTIONAL_EXTRAS:  # a broken install, not a missing extra: keep the traceback
            raise
        extra = OPTIONAL_EXTRAS[exc.name]
        print(f"{parser.prog} {args.kind}: needs {exc.name}, which is not installed: "
              f'pip install -e ".[{extra}]" (or pip install "vlmjudge[{extra}]")', file=sys.stderr)
        return 2
    print(f"built {args.kind} at {path}")
    if args.hub_id:
        commit = install_in_hf_cache(path, args.hub_id)
        print(f"installed as {args.hub_id} at revision {commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
