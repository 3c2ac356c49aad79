"""A request's prompt as the model's language model sees it: the chat-template tokens with every
image expanded into its visual tokens, each visual token named by the image's pixel digest.

Read-only: it asks a TransformersJudge for its rendering (`prompt_text`), its tokenizer and its
processor, and changes nothing. Why it exists: to count the tokens a run could not avoid
prefilling (bench.ideal), a text token must compare equal only to the same text token and a
visual token only to the same position of the same image (two images of one size give the same
number of pad tokens, yet are different inputs).
"""
from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from vlmjudge.backends.hf import image_tokens
from vlmjudge.images import image_bytes_digest
from vlmjudge.requests import Request

#: Processor attributes that name the token the processor repeats once per visual token.
_EXPANDED_ATTRS = ("image_token",)
#: Config fields that hold the id of that repeated token.
_EXPANDED_CONFIG = ("image_token_id", "image_token_index")


def expanded_image_token_id(judge: Any) -> int | None:
    """The id the processor writes once per visual token (Qwen's `<|image_pad|>`, LLaVA's
    `<image>`), or None when neither the processor nor the config names one."""
    vocab = judge.tokenizer.get_vocab()
    for attr in _EXPANDED_ATTRS:
        token = getattr(judge.processor, attr, None)
        if isinstance(token, str) and token in vocab:
            return vocab[token]
    config = getattr(getattr(judge, "model", None), "config", None)
    for name in _EXPANDED_CONFIG:
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    return None


def prompt_token_keys(judge: Any, request: Request,
                      digests: dict[int, tuple[Any, str]] | None = None) -> list[Hashable]:
    """The expanded prompt of `request`: ints for text tokens, `(digest, k)` for the k-th visual
    token of an image. `digests` memoises pixel digests by image object within one count.

    The expansion takes each image's visual-token count from the processor (what the judge's own
    prefill counter uses) where the unexpanded prompt holds one placeholder per image, and else
    runs the processor on the prompt and its images (exact, slower)."""
    text = judge.prompt_text(request)
    ids = list(judge.tokenizer(text)["input_ids"])
    pils = request.pil_images()
    if not pils:
        return ids
    memo = digests if digests is not None else {}
    names = [_digest_of(memo, pil) for pil in pils]
    pad = expanded_image_token_id(judge)
    places = [i for i, t in enumerate(ids) if t == pad]
    counts_known = hasattr(judge.processor, "_get_num_multimodal_tokens")  # else image_tokens guesses
    if pad is not None and len(places) == len(pils) and counts_known:
        counts = image_tokens(judge.processor, [(p.height, p.width) for p in pils])
        out: list[Hashable] = []
        start = 0
        for place, name, count in zip(places, names, counts):
            out += ids[start:place]
            out += [(name, k) for k in range(count)]
            start = place + 1
        return out + ids[start:]
    return _expanded_by_processor(judge, text, pils, names, pad)


def _expanded_by_processor(judge: Any, text: str, pils: list, names: list[str], pad: int | None) -> list[Hashable]:
    """The processor's own expansion; runs of the pad id are the images, in order."""
    if pad is None:
        raise ValueError("cannot tell the visual tokens of this processor apart from text tokens")
    expanded = judge.processor(text=[text], images=pils, return_tensors="pt")["input_ids"][0].tolist()
    starts = {i for i, t in enumerate(expanded) if t == pad and (i == 0 or expanded[i - 1] != pad)}
    if len(starts) != len(names):
        raise ValueError(f"the processor wrote {len(starts)} runs of visual tokens for {len(names)} images")
    out: list[Hashable] = []
    image, k = -1, 0
    for i, t in enumerate(expanded):
        if t != pad:
            out.append(t)
            continue
        if i in starts:
            image, k = image + 1, 0
        out.append((names[image], k))
        k += 1
    return out


def _digest_of(memo: dict[int, tuple[Any, str]], pil: Any) -> str:
    """The pixel digest of an image object, computed once per object; the memo keeps the object
    alive, so its id cannot be reused by another image while the memo lives."""
    known = memo.get(id(pil))
    if known is None or known[0] is not pil:
        known = memo[id(pil)] = (pil, image_bytes_digest(pil))
    return known[1]
