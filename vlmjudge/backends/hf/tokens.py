"""Prompt token ids: which ids mark an image (`placeholder_ids`), and ids memoised per text (`TokenIds`).

One question asked of many images is one prompt text (the image is a placeholder until the
processor expands it): TerraVis' 18 checks render the same 18 texts for every image. The
tokenizer is deterministic, so its ids for a text are kept (most recent `size` texts) and
reused. The memo is dropped when a judge is pickled; it refills on use.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

#: Distinct prompt texts whose ids a judge keeps.
MEMO_TEXTS = 4096


class TokenIds:
    """`tokenizer(text)["input_ids"]` as a tuple, memoised by text (thread-safe, LRU)."""

    def __init__(self, tokenizer: Any, size: int = MEMO_TEXTS) -> None:
        self.tokenizer, self.size = tokenizer, size
        self._memo: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str) -> tuple[int, ...]:
        with self._lock:
            ids = self._memo.get(text)
            if ids is not None:
                self._memo.move_to_end(text)
                return ids
        ids = tuple(self.tokenizer(text)["input_ids"])
        with self._lock:
            self._memo[text] = ids
            while len(self._memo) > self.size:
                self._memo.popitem(last=False)
        return ids

    def prefetch(self, texts: list[str]) -> None:
        """Tokenise the texts not yet kept in one tokenizer call (a batch is one native call, and
        the same ids as one call each)."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if not missing:
            return
        batch = self.tokenizer(missing)["input_ids"]
        with self._lock:
            for text, ids in zip(missing, batch):
                self._memo[text] = tuple(ids)
            while len(self._memo) > self.size:
                self._memo.popitem(last=False)

    def __len__(self) -> int:
        return len(self._memo)

    def __getstate__(self) -> dict[str, Any]:
        return {"tokenizer": self.tokenizer, "size": self.size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["tokenizer"], state["size"])


#: Processor attributes naming the token a template writes for an image, where a processor has one.
_PLACEHOLDER_ATTRS = ("image_token", "boi_token", "start_image_token", "image_start_token", "fake_image_token")


def placeholder_ids(processor: Any, config: Any) -> set[int]:
    """Ids that mark an image in a prompt before the processor expands it. They come from the
    processor: the special tokens its chat template writes for an image part (a chat rendered
    with and without one), and its image token attributes. The config's image ids are the
    expanded soft tokens of some families (Gemma 3's `<image_soft_token>`, Llama 4's
    `<|patch|>`), which an unexpanded prompt never holds; they are kept too, as harmless extras."""
    tok = processor.tokenizer
    special = set(getattr(tok, "added_tokens_decoder", {})) | set(tok.all_special_ids)
    found: set[int] = set()
    renderer = processor if getattr(processor, "chat_template", None) else tok
    if getattr(renderer, "chat_template", None):
        def rendered(parts: list[dict]) -> set[int]:
            text = renderer.apply_chat_template([{"role": "user", "content": parts}], tokenize=False,
                                                add_generation_prompt=True)
            return set(tok(text, add_special_tokens=False)["input_ids"])
        words = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        found = (rendered([words[0], {"type": "image"}, words[1]]) - rendered(words)) & special
    vocab = tok.get_vocab()
    found |= {vocab[t] for t in (getattr(processor, a, None) for a in _PLACEHOLDER_ATTRS)
              if isinstance(t, str) and t in vocab}
    found |= {t for t in (getattr(config, n, None) for n in ("image_token_id", "image_token_index", "video_token_id"))
              if isinstance(t, int)}
    return found
