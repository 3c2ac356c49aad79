"""Request preparation for the transformers judge: chat-template rendering, tokenizer ids, the
token sequence an option is written as, and a batch's CPU inputs (built on the prefetch thread
where one runs).

`option_sequences` gives each option's `surface_form` (`vlmjudge.options`: the next word, after
a space unless the prompt ends in whitespace) as token ids in context: the prompt's tail
tokenised with and without it. A form of several tokens is scored whole by `choice_probs`.
Constrained generation's `first_options` needs one token per option (`option_ids`, the same
form's id), so for single-token options both read the same ids.
"""
from __future__ import annotations

from typing import Any, Sequence

from ...options import single_token_ids, surface_form
from ...requests import Request
from .prefix import kv_run as kvrun
from .prefix import units as prefixes

#: Characters of the prompt's end re-tokenised to find which token an option is.
_TAIL_CHARS = 48
#: Contexts `validate_options` checks: an option must be one token after either.
_VALIDATION_TAILS = ("Answer:", "Answer:\n")


class RequestPreparation:
    """The request-side half of `TransformersJudge` (mixed into it): reads its tokenizer,
    processor, token memo, runner and prefetcher, and changes no model state."""

    def validate_options(self, options: Sequence[str]) -> None:
        """Every option must be writable, and told apart from the others, after "Answer:" and
        after a newline: fail before any model work, not in the middle of a run."""
        for tail in _VALIDATION_TAILS:
            self.option_sequences(tail, options)

    def option_sequences(self, prompt_text: str, options: Sequence[str]) -> dict[str, tuple[int, ...]]:
        """Each option's surface form as token ids right after `prompt_text` (see module doc); a
        ValueError when a form merges into the prompt's last token (no token sequence after
        these prompt ids writes it) or starts another option's (it would count for both)."""
        tail = prompt_text[-_TAIL_CHARS:]
        key = ("sequences", tail, tuple(options))
        if key not in self._option_cache:
            base = self.tokenizer.encode(tail, add_special_tokens=False)
            found: dict[str, tuple[int, ...]] = {}
            for option in options:
                full = self.tokenizer.encode(tail + surface_form(option, tail), add_special_tokens=False)
                if len(full) <= len(base) or full[:len(base)] != base:
                    pieces = self.tokenizer.convert_ids_to_tokens(full)[-3:]
                    raise ValueError(f"option {option!r} cannot be written after {tail[-12:]!r}: it merges "
                                     f"into the prompt's last token ({pieces})")
                found[option] = tuple(full[len(base):])
            _check_apart(found, tail)
            self._option_cache[key] = found
        return self._option_cache[key]

    def extension(self, prompt_text: str, ids: Sequence[int]) -> str:
        """The text that extends `prompt_text` by exactly the token `ids` (an option's leading
        tokens, fed to score the rest); a ValueError where the tokenizer would write that text
        as other tokens, since the reading would then score a sequence the model never saw."""
        prompt_ids = tuple(self._token_ids(prompt_text))
        anchor = self.tokenizer.decode(list(prompt_ids[-8:]))  # decoded after the prompt's last tokens:
        written = self.tokenizer.decode(list(prompt_ids[-8:]) + list(ids))  # a word-start "▁" keeps its space
        written = written[len(anchor):] if written.startswith(anchor) else self.tokenizer.decode(list(ids))
        if tuple(self._token_ids(prompt_text + written)) != prompt_ids + tuple(ids):
            raise ValueError(f"an option's leading tokens {self.tokenizer.convert_ids_to_tokens(list(ids))} do "
                             "not tokenise back to themselves after the prompt; choose other options")
        return written

    def option_ids(self, prompt_text: str, options: Sequence[str]) -> list[int]:
        """The token id each option would be as the next word after `prompt_text` (constrained
        generation's `first_options` restricts the first answer token to these)."""
        tail = prompt_text[-_TAIL_CHARS:]
        key = (tail, tuple(options))
        if key not in self._option_cache:
            self._option_cache[key] = single_token_ids(self.tokenizer, tail, options)
        return self._option_cache[key]

    def _prompt(self, request: Request, digests: dict[tuple, str] | None = None,
                renders: dict[tuple, str] | None = None, text: str | None = None) -> prefixes.Prompt:
        """`renders` memoises chat-template renderings within one call, by the chat's repr (images
        are placeholders there, or objects named by identity): one question of many images is one
        text. `text`: the request's rendering, where the caller has it."""
        text = text if text is not None else self._rendered(request, renders)
        ids = list(self._token_ids(text))  # memoised: one question asked of many images is one text
        prompt = prefixes.make_prompt(text, ids, request.images, request.pil_images(), self._image_token_ids,
                                      stems=self._runner.stems)
        if digests is not None:
            prompt.digests = digests
        return prompt

    def _rendered(self, request: Request, renders: dict[tuple, str] | None) -> str:
        """The request's prompt text, from `renders` (a call's memo) when it holds it."""
        key = (repr(request.chat()), request.prefix) if renders is not None else None
        text = renders.get(key) if key is not None else None
        if text is None:
            text = self.prompt_text(request)
            if key is not None:
                renders[key] = text
        return text

    def prompt_text(self, request: Request) -> str:
        """The chat-template rendering of a request, generation prompt and prefix included."""
        chat = request.chat()
        renderer = self.processor if getattr(self.processor, "chat_template", None) else self.tokenizer
        if not getattr(renderer, "chat_template", None):
            raise ValueError(f"{self.model_id!r} has no chat template on its processor or tokenizer")
        text = renderer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        return text + request.prefix

    def _prepare(self, processor: Any, batch: list[Request]) -> Any:
        """CPU inputs for a batch (run on the prefetch thread with its own processor copy):
        a `PreparedBatch` for the shared-prefix path, else the processor's padded output."""
        prompts = [self._prompts.get(id(r)) or self._prompt(r) for r in batch]
        if self.prefix_reuse:
            units = prefixes.make_units(prompts)
            if units is not None:
                return kvrun.prepare(processor, prompts, [r.pil_images() for r in batch], units, self.pad_id,
                                     self.kv_cache, self.vision_cache.enabled)
        texts = [p.text for p in prompts]
        return prefixes.processor_inputs(processor, texts, [r.pil_images() for r in batch]), texts

    def _prepared(self, batch: list[Request]) -> Any:
        """A batch's inputs: the prefetcher's, when it prepared them, else made here."""
        ready = self._prefetcher.take(batch) if self._prefetcher is not None else None
        return ready if ready is not None else self._prepare(self.processor, batch)

    def _to_device(self, inputs: Any) -> Any:
        """Processor outputs on the model's device, pixel values in its dtype."""
        inputs = inputs.to(self.model.device)
        for key, value in inputs.items():  # pixel values in the model's dtype; ids stay integers
            if hasattr(value, "is_floating_point") and value.is_floating_point():
                inputs[key] = value.to(self.model.dtype)
        return inputs



def _check_apart(found: dict[str, tuple[int, ...]], tail: str) -> None:
    """No option's token sequence may start another option's: a model writing the longer one
    would count for both."""
    for option, seq in found.items():
        for other, longer in found.items():
            if other != option and longer[:len(seq)] == seq:
                raise ValueError(f"after {tail[-12:]!r}, option {option!r} is written as the start of option "
                                 f"{other!r}; choose options no one of which begins another")
