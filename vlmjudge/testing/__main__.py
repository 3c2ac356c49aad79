"""`python -m vlmjudge.testing KIND OUT_DIR`: build a tiny random checkpoint offline.

KIND is qwen3_vl, llava, clip, dinov2, siglip, text_to_image (a diffusers pipeline) or
image_edit (an InstructPix2Pix-style diffusers pipeline). `--hub-id ORG/NAME` also installs it
into the Hugging Face cache at a fake commit, so it loads by Hub id offline.
"""
from __future__ import annotations

import argparse
import sys

from . import (build_tiny_clip, build_tiny_dinov2, build_tiny_image_edit, build_tiny_siglip,
               build_tiny_text_to_image, build_tiny_vlm, install_in_hf_cache)

BUILDERS = {
    "qwen3_vl": lambda out, a: build_tiny_vlm(out, family="qwen3_vl", image_tokens=a.image_tokens, yes_bias=a.yes_bias),
    "llava": lambda out, a: build_tiny_vlm(out, family="llava", yes_bias=a.yes_bias),
    "clip": lambda out, a: build_tiny_clip(out),
    "dinov2": lambda out, a: build_tiny_dinov2(out),
    "siglip": lambda out, a: build_tiny_siglip(out),
    "text_to_image": lambda out, a: build_tiny_text_to_image(out),
    "image_edit": lambda out, a: build_tiny_image_edit(out),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlmjudge.testing", description=__doc__)
    parser.add_argument("kind", choices=sorted(BUILDERS))
    parser.add_argument("out")
    parser.add_argument("--image-tokens", default=None, choices=[None, "realistic"],
                        help="'realistic': a 1024x1024 image gives ~1024 visual tokens, as Qwen3-VL")
    parser.add_argument("--yes-bias", type=float, default=0.0, help="logit bias on 'Yes' (sets a positive rate)")
    parser.add_argument("--hub-id", default=None, help="also install into the HF cache as ORG/NAME")
    args = parser.parse_args(argv)
    path = BUILDERS[args.kind](args.out, args)
    print(f"built {args.kind} at {path}")
    if args.hub_id:
        commit = install_in_hf_cache(path, args.hub_id)
        print(f"installed as {args.hub_id} at revision {commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
