"""The flags that size a diffusers generator's call, shared by every command that generates images.

A pipeline's own defaults (often 50 steps at 1024 px) make a small check run for minutes;
`--steps`, `--height` and `--width` set them, with the same names, help and checks on
`regeneration run` and `fager refine`.
"""
from __future__ import annotations

import argparse
from typing import Any


def positive_int(text: str) -> int:
    """An argparse type for counts and sizes: a whole number above zero, else a usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_generator_call_flags(group: argparse._ActionsContainer) -> None:
    """Add --steps, --height and --width to a parser or argument group (each default: the pipeline's)."""
    group.add_argument("--steps", type=positive_int, default=None,
                       help="num_inference_steps for a diffusers pipeline (default: the pipeline's)")
    group.add_argument("--height", type=positive_int, default=None,
                       help="image height in pixels (default: the pipeline's)")
    group.add_argument("--width", type=positive_int, default=None,
                       help="image width in pixels (default: the pipeline's)")


def generator_call_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The pipeline call's keyword arguments the flags set; a flag not given leaves the pipeline's default."""
    call = {"num_inference_steps": args.steps, "height": args.height, "width": args.width}
    return {key: value for key, value in call.items() if value is not None}

