"""Shared by the integration tests: a short TerraVis pack, methods over tiny models, images, an imagefolder."""
from __future__ import annotations

import json
import os

import numpy as np
from PIL import Image

from vlmjudge.integrations import Method

# A short TerraVis pack: "No" is the violation word, so the Yes-biased tiny model flags a few
# violations per image (a cheap mix of scored and N/A images, with some generation).
SHORT_PACK = {"system": "Judge the image.", "eligibility": "Is it a real scene?", "detection": "Answer Yes or No.",
              "severity": "{type_name}: {aspect}, {evidence}. Major or Minor?",
              "limits": {"reason": 6, "aspect": 4, "evidence": 8}, "max_new_tokens": {"reason": 16, "evidence": 24},
              "options": {"detection": ["No", "Yes"]}}
TERRAVIS_CONFIG = {"pack": SHORT_PACK, "lam": 0.2}
# The same pack with "Yes" as the ineligible word: every image is N/A after one question.
NA_CONFIG = {"pack": {**SHORT_PACK, "options": {"eligibility": ["No", "Yes"]}}}


def terravis(label: str | None = None, **config) -> Method:
    return Method("terravis", config={**TERRAVIS_CONFIG, **config}, label=label)


def regeneration(encoders: dict[str, str]) -> Method:
    """Similarity only (no MLLM ratings): the judge is None whatever the panel's is."""
    return Method("regeneration", judge=None,
                  config={"clip_model": encoders["clip"], "dino_model": encoders["dino"], "device": "cpu"})


def noise_images(n: int, seed: int = 0, size: tuple[int, int] = (40, 32)) -> list[Image.Image]:
    rng = np.random.RandomState(seed)
    return [Image.fromarray(rng.randint(0, 256, (size[1], size[0], 3), dtype=np.uint8)) for _ in range(n)]


def write_imagefolder(folder: str | os.PathLike, n: int = 4) -> list[str]:
    """n generated images (noise, the second one black) with a reference image and a prompt each
    (imagefolder metadata.jsonl)."""
    os.makedirs(folder, exist_ok=True)
    prompts = [f"a red car number {i}" for i in range(n)]
    generated = noise_images(n, seed=1)
    generated[1] = Image.new("RGB", generated[1].size)
    with open(os.path.join(folder, "metadata.jsonl"), "w") as f:
        for i, (gen, ref) in enumerate(zip(generated, noise_images(n, seed=2, size=(32, 32)))):
            gen.save(os.path.join(folder, f"gen{i}.png"))
            ref.save(os.path.join(folder, f"ref{i}.png"))
            f.write(json.dumps({"file_name": f"gen{i}.png", "reference_file_name": f"ref{i}.png",
                                "prompt": prompts[i]}) + "\n")
    return prompts
