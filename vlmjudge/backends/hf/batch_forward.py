"""One batch through the model for the transformers judge: next-token probabilities of the
options, or generated answers under per-row control, on the shared-prefix path (`prefix/`)
or the unshared one (one left-padded forward or one `model.generate` call over whole prompts).
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ...options import OptionProbs
from ...requests import Answer, Request
from .prefix import units as prefixes


class BatchForward:
    """The model-side half of `TransformersJudge` (mixed into it): runs a prepared batch and
    counts what ran in the judge's stats."""

    def _count(self, images: int, tokens: int) -> None:
        """Stats for a batch that ran (a batch lost to out-of-memory is not counted)."""
        self.stats.forward_batches += 1
        self.stats.images_encoded += images
        self.stats.prefill_tokens += tokens

    def _encoded(self, prepared: prefixes.PreparedBatch, before: int) -> int:
        """Images the tower ran on for a shared-prefix batch (the vision cache served the rest)."""
        return self.vision_cache.encoded - before if prepared.image_keys else prepared.n_images

    def _count_plain(self, inputs: Any, batch: list[Request]) -> None:
        """Stats for an unshared batch: its real tokens; its requests as fallbacks where sharing is blocked."""
        if self.sharing_blocker is not None:
            self.stats.unshared_fallback += len(batch)
        self._count(sum(len(r.images) for r in batch), int(inputs["attention_mask"].sum()))

    def _first_logits(self, batch: list[Request]) -> tuple[Any, list[str], Any]:
        """Next-token logits (float32) after each prompt, the prompts, and what decoding needs
        next (the shared-prefix state, or the padded inputs of the unshared path)."""
        prepared = self._prepared(batch)
        if isinstance(prepared, prefixes.PreparedBatch):
            encoded = self.vision_cache.encoded
            logits, state = self._runner.first_logits(prepared, self.model.device, self.model.dtype,
                                                      by_length=True)  # nothing decodes after
            self._count(self._encoded(prepared, encoded), prepared.prefill_tokens)
            return logits, prepared.texts, state
        inputs, texts = prepared
        inputs = self._to_device(inputs)
        logits = self.model(**inputs, use_cache=False, logits_to_keep=1).logits[:, -1, :].float()
        self._count_plain(inputs, batch)
        return logits, texts, None

    def _probs_batch(self, batch: list[Request], options: list[str], normalize: bool = True) -> list[OptionProbs]:
        """Option probabilities as `vlmjudge.options` defines them: each option's surface form, one
        of several tokens scored under teacher forcing (one more forward for the batch, over the
        prompts extended by the forms' leading tokens), normalised over the options unless
        `normalize` is False; the options' total is the mass."""
        import torch
        with torch.inference_mode():
            logits, texts, _ = self._first_logits(batch)
            sequences = [self.option_sequences(text, options) for text in texts]
            ids = sorted({t for by_option in sequences for seq in by_option.values() for t in seq})
            column = {t: j for j, t in enumerate(ids)}
            # the needed columns only, in one transfer: a read per option and row would sync each time
            first = torch.log_softmax(logits, dim=-1)[:, ids].tolist()
            contexts = list(dict.fromkeys((row, seq[:k]) for row, by_option in enumerate(sequences)
                                          for seq in by_option.values() for k in range(1, len(seq))))
            after = self._context_logprobs(batch, texts, contexts, ids) if contexts else {}
        out = []
        for row, by_option in enumerate(sequences):
            def logprob(seq: tuple[int, ...]) -> float:
                steps = [first[row] if k == 0 else after[(row, seq[:k])] for k in range(len(seq))]
                return math.fsum(step[column[token]] for step, token in zip(steps, seq))
            out.append(_from_logprobs({o: logprob(seq) for o, seq in by_option.items()}, normalize))
        return out

    def _context_logprobs(self, batch: list[Request], texts: list[str], contexts: list[tuple[int, tuple[int, ...]]],
                          ids: list[int]) -> dict[tuple[int, tuple[int, ...]], list[float]]:
        """Next-token log-probabilities of the token `ids` after each row's prompt extended by a
        context's token ids (teacher forcing through the assistant prefix, written by `extension`)."""
        import torch
        asked = [replace(batch[row], prefix=batch[row].prefix + self.extension(texts[row], context), meta={})
                 for row, context in contexts]
        logits, _, _ = self._first_logits(asked)
        return dict(zip(contexts, torch.log_softmax(logits, dim=-1)[:, ids].tolist()))

    def _generate_batch(self, batch: list[Request]) -> list[Answer]:
        """Generated answers for one batch, on the shared-prefix path where it was prepared for it."""
        import torch

        from .decoding.row_control import RowControl
        prepared = self._prepared(batch)
        if isinstance(prepared, prefixes.PreparedBatch):
            plans = [self._plan(r, text) for r, text in zip(batch, prepared.texts)]
            control = RowControl(plans, 0, self.eos_ids, self.tokenizer, self.vocab_size)
            encoded = self.vision_cache.encoded
            with torch.inference_mode():
                first, state = self._runner.first_logits(prepared, self.model.device, self.model.dtype)
                sequences = self._runner.decode(first, state, control, max(p.max_new_tokens for p in plans),
                                                self.pad_id)
            self._count(self._encoded(prepared, encoded), prepared.prefill_tokens)
        else:
            inputs, texts = prepared
            inputs = self._to_device(inputs)
            sequences, control = self._generate_plain(inputs, batch, texts)
            self._count_plain(inputs, batch)
        answers = []
        for text, reason, n in control.finish(sequences):
            self.stats.generated_tokens += n
            answers.append(Answer(text, reason, n))
        return answers

    def _generate_plain(self, inputs: Any, batch: list[Request], texts: list[str]) -> tuple[Any, Any]:
        """One `model.generate` call over whole, left-padded prompts (the unshared path)."""
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        from .decoding.row_control import RowControl, plain_generation_config
        plans = [self._plan(r, text) for r, text in zip(batch, texts)]
        prompt_len = inputs["input_ids"].shape[1]
        control = RowControl(plans, prompt_len, self.eos_ids, self.tokenizer, self.vocab_size)
        with torch.inference_mode(), plain_generation_config(self.model, self.eos_ids, self.pad_id) as config:
            config.max_new_tokens = max(p.max_new_tokens for p in plans)
            sequences = self.model.generate(**inputs, generation_config=config,
                                            logits_processor=LogitsProcessorList([control]),
                                            stopping_criteria=StoppingCriteriaList([control.stopping]))
        control.prompt_len = 0
        return sequences[:, prompt_len:], control

    def _plan(self, request: Request, text: str):
        """A row's decoding settings and constraint (matcher, closer, first-token options)."""
        from .decoding.row_control import RowPlan
        d, c = request.decoding, request.constraint
        plan = RowPlan(max_new_tokens=d.max_new_tokens, temperature=d.temperature, top_p=d.top_p,
                       seed=d.seed, stop=tuple(d.stop))
        if c is not None:
            if c.first_options:
                plan.first_ids = self.option_ids(text, c.first_options)
            plan.matcher = self._grammar_compiler().matcher(c)
            plan.closer = self._grammars.closers.row(c, plan.matcher)
        return plan

    def _grammar_compiler(self):
        """The grammar compiler, built on first use: xgrammar is imported only when a row is constrained."""
        if self._grammars is None:  # with the closers of JSON-schema rows beside it (`decoding.forcing`)
            from .decoding.forcing import compiler_with_closers
            self._grammars = compiler_with_closers(self.tokenizer, self.vocab_size, self.eos_ids)
        return self._grammars



def _from_logprobs(logprobs: dict[str, float], normalize: bool) -> OptionProbs:
    """Option probabilities from their log-probabilities, normalised relative to the largest (two
    options of several tokens each may both lie below what exp() can hold); empty when no option
    has any probability (a fully masked row)."""
    mass = math.fsum(math.exp(lp) for lp in logprobs.values())
    if not normalize:
        return OptionProbs({o: math.exp(lp) for o, lp in logprobs.items()}, mass)
    top = max(logprobs.values())
    if top == -math.inf:
        return OptionProbs()
    shares = {o: math.exp(lp - top) for o, lp in logprobs.items()}
    total = math.fsum(shares.values())
    return OptionProbs({o: share / total for o, share in shares.items()}, mass)
