"""Pieces the tiny family builders share: a tokenizer trained offline, chat templates, sizes.

Every family's tokenizer is a small byte-level BPE (the `Qwen2Tokenizer` class) trained on a
corpus holding the option words, digits, JSON punctuation and the family's template words,
with the family's image and turn markers as special tokens. Where a processor reads its
image tokens from the tokenizer (Gemma, InternVL), they are set as named special tokens.
"""
from __future__ import annotations

import shutil
from typing import Any, Mapping, Sequence

from .tiny_vlm import INIT_RANGE, OPTION_WORDS, _corpus

#: Vocabulary size of the tiny tokenizers: room for the option words as single tokens.
VOCAB = 700
#: Template words and newline runs (a real vocabulary has "\n\n" tokens), repeated in the corpus.
_TEMPLATE_WORDS = ["\n", "\n\n", "\n\n\n", " \n", "user\n", "model\n", "assistant\n", "USER: ", "ASSISTANT:",
                   "User:", "Assistant:", "[INST]", "[/INST]", "First", "then", "Same?"]
ROLES = ("system", "user", "assistant")


def train_tokenizer(special: Sequence[str], eos: str, *, named: Mapping[str, str] | None = None,
                    bos: str | None = None, pad: str = "<|endoftext|>"):
    """A BPE tokenizer knowing `special` as whole tokens; every option word is one token
    bare and after a space (else option logits would read some other id)."""
    from transformers import Qwen2Tokenizer
    corpus = _corpus() + _TEMPLATE_WORDS * 20
    tok = Qwen2Tokenizer().train_new_from_iterator([corpus], vocab_size=VOCAB, new_special_tokens=list(special))
    tok.pad_token, tok.eos_token = pad, eos
    if bos is not None:
        tok.bos_token = bos
    if named:
        tok._set_model_specific_special_tokens(dict(named))
    for word in OPTION_WORDS:
        for form in (word, " " + word):
            n = len(tok.encode(form, add_special_tokens=False))
            if n != 1:
                raise AssertionError(f"tiny tokenizer splits option {form!r} into {n} tokens")
    return tok


def chat_template(*, opens: Mapping[str, str], closes: Mapping[str, str], image: str,
                  generation: str, start: str = "") -> str:
    """A Jinja chat template: `start`, then per message its role's opening, its parts in
    order (an image part is `image`, in place), its role's closing; then `generation`."""
    def table(values: Mapping[str, str]) -> str:
        return "{" + ", ".join(f"{role!r}: {values.get(role, '')!r}" for role in ROLES) + "}"
    return (
        f"{{% set opens = {table(opens)} %}}{{% set closes = {table(closes)} %}}{start}"
        "{% for message in messages %}{{ opens[message['role']] }}"
        "{% if message['content'] is string %}{{ message['content'] }}"
        "{% else %}{% for c in message['content'] %}"
        f"{{% if c['type'] == 'image' %}}{image}"
        "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
        "{{ closes[message['role']] }}{% endfor %}"
        f"{{% if add_generation_prompt %}}{generation}{{% endif %}}")


def turns(open_fmt: str, close: str, names: Mapping[str, str] | None = None) -> tuple[dict, dict]:
    """Openings and closings for templates whose turns differ only by the role's name."""
    names = names or {}
    return ({r: open_fmt.format(role=names.get(r, r)) for r in ROLES}, {r: close for r in ROLES})


def text_config(tok, **overrides: Any) -> dict[str, Any]:
    """A two-layer text model of width 64 over the tokenizer's vocabulary."""
    config = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
                  pad_token_id=tok.pad_token_id, initializer_range=INIT_RANGE)
    config.update(overrides)
    return config


def vision_config(**overrides: Any) -> dict[str, Any]:
    """A two-layer vision tower of width 32."""
    config = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  initializer_range=INIT_RANGE)
    config.update(overrides)
    return config


def save(model: Any, processor: Any, out: str) -> str:
    """Write model and processor to `out` (replaced), with the tokenizer's EOS and pad ids in
    the generation config."""
    tok = processor.tokenizer
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


UNIT_NORM = dict(image_mean=[0.5] * 3, image_std=[0.5] * 3)
