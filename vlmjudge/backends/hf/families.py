"""The open judge families the in-process backend supports, and what each one gets.

Keyed by the checkpoint config's `model_type`. Every row is exercised by the conformance
suite (tests/vlmjudge/testing) on a tiny random checkpoint of the family built with its real
config, model and processor classes (`python -m vlmjudge.testing <family> DIR`); docs/judges.md's
"Supported families" table shows the same rows. An architecture missing here still loads, through the
generic path, with a warning; one in `REFUSED` gives wrong results and is refused at load.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

#: Why a family's vision-tower outputs are not kept across calls (`backends.hf.prefix.vision_cache`):
#: the store swaps the inner model's `get_image_features` for one that splits the forward's images and
#: serves each by its pixel digest. It splits Qwen-VL patch grids (`image_grid_thw`) and one
#: pixel array per image (Gemma 3/4, LLaVA, Pixtral); tiled inputs carry no tile count per
#: image in the forward, so they are not split yet and those families encode every call.
NO_VISION_CACHE = "not yet: tiled image inputs are not split per image"


@dataclass(frozen=True)
class Family:
    """One supported family: its name, how prompts sharing a prefix run, whether the vision
    outputs are cached across calls (else why not), and notes."""

    model_type: str
    name: str
    shared_prefix: str = "yes"
    vision_cache: str = "yes"
    notes: str = ""

    @property
    def row(self) -> dict[str, str]:
        """The docs/judges.md table's row: loads, shared prefix, vision cache, grammar, tested."""
        return {"family": self.name, "model_type": self.model_type, "loads": "yes",
                "shared prefix": self.shared_prefix, "vision cache": "yes" if self.vision_cache == "yes" else "no",
                "grammar": "yes", "tested": "yes"}


_WINDOW = "yes (suffixes in equal-length blocks under its sliding window)"
FAMILIES: dict[str, Family] = {f.model_type: f for f in (
    Family("qwen2_vl", "Qwen2-VL"),
    Family("qwen2_5_vl", "Qwen2.5-VL"),
    Family("qwen3_vl", "Qwen3-VL", notes="the papers' judge for VIEScore2 and FAGER (8B)"),
    Family("qwen3_vl_moe", "Qwen3-VL-MoE"),
    Family("qwen3_5", "Qwen3.5", shared_prefix="no: hybrid linear-attention cache, runs unshared",
           vision_cache="no: the vision cache serves the shared-prefix path only",
           notes="falls back to the unshared path automatically (stats.unshared_fallback)"),
    Family("glm4v", "GLM-4.1V"),
    Family("gemma3", "Gemma 3", shared_prefix=_WINDOW),
    Family("gemma4", "Gemma 4", shared_prefix=_WINDOW,
           notes="the paper's judge for TerraVis (31B)"),
    Family("llava", "LLaVA"),
    Family("llava_onevision", "LLaVA-OneVision",
           vision_cache="no: an image's features depend on its prompt's image count (anyres tiling only "
                        "when the prompt has one image), so pixels alone cannot key them"),
    Family("idefics3", "Idefics3", vision_cache=NO_VISION_CACHE),
    Family("smolvlm", "SmolVLM", vision_cache=NO_VISION_CACHE, notes="its processor needs num2words"),
    Family("internvl", "InternVL", vision_cache=NO_VISION_CACHE),
    Family("mistral3", "Mistral 3 (Pixtral)"),
    Family("llama4", "Llama 4", shared_prefix="yes (suffixes in equal-length blocks under its attention chunk)",
           vision_cache=NO_VISION_CACHE,
           notes="transformers 5.24's forward reads a missing `image_outputs`; the backend adds it"),
)}

#: Architectures known to give wrong results here, with the reason.
REFUSED: dict[str, str] = {
    "mllama": "Llama 3.2 Vision feeds images through cross-attention layers and a cross-attention mask, "
              "which the shared-prefix path does not carry into the suffixes (its answers would ignore the image)",
}


class UnsupportedArchitecture(ValueError):
    """A checkpoint whose architecture is known to give wrong results with this backend."""


def family_of(config: Any) -> Family | None:
    """The supported family of a model config (None: not in the table; refused: an error)."""
    model_type = getattr(config, "model_type", None)
    if model_type in REFUSED:
        raise UnsupportedArchitecture(f"{model_type} is not supported by the transformers backend: "
                                      f"{REFUSED[model_type]}")
    family = FAMILIES.get(model_type)
    if family is None:
        warnings.warn(f"model type {model_type!r} is not among the tested judge families "
                      f"({', '.join(FAMILIES)}); loading it through the generic path", stacklevel=3)
    return family


def table() -> list[dict[str, str]]:
    """The rows of the "Supported families" table (docs/judges.md), in order."""
    return [f.row for f in FAMILIES.values()]


def markdown_table() -> str:
    """The "Supported families" table of docs/judges.md (a test keeps the page equal to it)."""
    columns = ["family", "model_type", "loads", "shared prefix", "vision cache", "grammar", "tested"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(row[c] for c in columns) + " |" for row in table()]
    return "\n".join(lines)
