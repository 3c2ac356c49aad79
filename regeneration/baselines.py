"""Initial prompts that skip the Image Understanding Tree, for the paper's comparisons.

* `direct_prompts`: the MLLM writes the prompt straight from the image (Table 3, "Direct").
* `interrogator_prompts`: a CLIP-interrogator-style prompt (Figure 3): a short caption, then
  the modifier phrases of a fixed vocabulary that CLIP ranks closest to the image, per
  category (medium, style, lighting, colour, flavour).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vlmjudge.images import to_pil

from .asking import json_request, run_stage
from .asking.iut import InitialPrompt
from .parsing import ParseFailure
from .pack import PromptPack, load_pack
from .schema import Caption, PromptAnswer

#: Modifier vocabulary per category, and how many top phrases each contributes.
INTERROGATOR_VOCAB: dict[str, tuple[int, tuple[str, ...]]] = {
    "medium": (1, ("a photograph", "a digital painting", "an oil painting", "a watercolor painting",
                   "a pencil sketch", "a 3d render", "an anime illustration", "a vector illustration",
                   "a charcoal drawing", "a pixel art image", "a cinematic film still", "a studio portrait")),
    "style": (1, ("photorealistic", "impressionism", "surrealism", "art nouveau", "pop art", "cyberpunk",
                  "fantasy art", "minimalism", "baroque", "ukiyo-e", "steampunk", "low poly")),
    "lighting": (1, ("soft natural light", "golden hour", "dramatic lighting", "studio lighting",
                     "backlit", "neon lights", "overcast light", "candlelight", "moonlight", "harsh sunlight")),
    "color": (1, ("vibrant colors", "muted colors", "pastel colors", "monochrome", "warm tones",
                  "cool tones", "high contrast", "black and white", "earthy tones", "saturated colors")),
    "flavor": (3, ("highly detailed", "sharp focus", "bokeh", "wide angle", "close-up", "symmetrical",
                   "intricate", "trending on artstation", "8k", "octane render", "depth of field",
                   "matte painting", "concept art", "award winning photograph", "volumetric light")),
}


def direct_prompts(judge: Any, images: Sequence[Any], ids: Sequence[str], *,
                   pack: PromptPack | Mapping | str | None = None, reading: str = "release") -> list[InitialPrompt]:
    """The MLLM's prompt written from the image alone, without an IUT."""
    pack = load_pack(pack)
    asks = [json_request(stage="direct_prompt", item=i, images=[to_pil(img, index=n)], system=pack.system,
                         text=pack.render("direct_prompt", max_words=pack.limits["max_words"]), schema=PromptAnswer)
            for n, (i, img) in enumerate(zip(ids, images))]
    return [InitialPrompt(i, None, "direct", [got]) if isinstance(got, ParseFailure)
            else InitialPrompt(i, got.prompt.strip(), "direct")
            for i, got in zip(ids, run_stage(judge, asks, PromptAnswer, reading=reading))]


def rank_modifiers(clip: Any, images: Sequence[Any],
                   vocab: Mapping[str, tuple[int, Sequence[str]]] = INTERROGATOR_VOCAB) -> list[list[str]]:
    """For each image, the top phrases of every category by CLIP image-text cosine (vocab order)."""
    import torch

    image_features = torch.nn.functional.normalize(clip.embed(images).double(), dim=-1)
    picked: list[list[str]] = [[] for _ in images]
    for top_k, phrases in vocab.values():
        phrases = list(phrases)
        if not 1 <= top_k <= len(phrases):
            raise ValueError(f"top_k {top_k} does not fit {len(phrases)} phrases")
        text_features = torch.nn.functional.normalize(clip.embed_text(phrases).double(), dim=-1)
        sims = image_features @ text_features.T
        for row, image_sims in enumerate(sims):
            order = torch.argsort(image_sims, descending=True, stable=True)[:top_k].tolist()
            picked[row].extend(phrases[j] for j in order)
    return picked


def interrogator_prompts(judge: Any, clip: Any, images: Sequence[Any], ids: Sequence[str], *,
                         pack: PromptPack | Mapping | str | None = None,
                         vocab: Mapping[str, tuple[int, Sequence[str]]] = INTERROGATOR_VOCAB,
                         reading: str = "release") -> list[InitialPrompt]:
    """Caption (from the judge) + CLIP-ranked modifiers, comma-joined, as a CLIP interrogator writes it."""
    pack = load_pack(pack)
    pils = [to_pil(img, index=n) for n, img in enumerate(images)]
    asks = [json_request(stage="caption", item=i, images=[img], system=pack.system, schema=Caption,
                         text=pack.render("caption", max_words=pack.limits["caption_words"]))
            for i, img in zip(ids, pils)]
    captions = run_stage(judge, asks, Caption, reading=reading)
    modifiers = rank_modifiers(clip, pils, vocab)
    out = []
    for i, got, mods in zip(ids, captions, modifiers):
        if isinstance(got, ParseFailure):
            out.append(InitialPrompt(i, None, "interrogator", [got]))
        else:
            out.append(InitialPrompt(i, ", ".join([got.caption.strip().rstrip("."), *mods]), "interrogator"))
    return out
