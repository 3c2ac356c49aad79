"""The in-process Hugging Face backend: any `AutoModelForImageTextToText` checkpoint as a judge.

Requests are rendered with the model's chat template, the assistant `prefix` appended
after the generation prompt, and run in batches under `torch.inference_mode`. By default
(`prefix_reuse=True`) requests sharing images and a token prefix run the vision tower and
that prefix once, and their suffixes against its KV cache (`_hf_prefix`); requests are
grouped, sorted by size into batches and restored to order (`_hf_batching`), and the next
batch's images are preprocessed on a worker thread while the model runs where a core is free
for it (`prefetch=None`, the default: on an accelerator, or on a CPU with more cores than
torch's threads; `batching.prefetch_pays`). On that path, a
Qwen-VL, GLM-4V, Gemma, LLaVA or Pixtral model's vision-tower outputs are also kept across calls (`vision_cache_mb`, default
2 GiB, 0 for off; see `_hf_vision`), so an image asked about in several calls (TerraVis
stages, FAGER chunks) is encoded once; `stats.images_encoded` counts the tower's runs. Prefix KV
rows are kept across calls too (`kv_cache_mb`, default 4 GiB, 0 for off; see `_hf_kvstore`): a
later prompt starting with a kept prefix runs only its new tokens. `choice_probs`
reads the next-token logits at the end of prompt + prefix, softmaxed over the option token
ids only (`normalize=False`: each option id's probability under the full-vocabulary softmax).
Generation decodes greedily with per-row control (grammar, first options, sampling
seeds, stop strings, budgets; see `_hf_decoding`). With `prefix_reuse=False` every batch is
one left-padded forward (or one `model.generate` call) over whole prompts: the unshared path
that the shared one equals. A CUDA out-of-memory error halves the batch and retries, so no
request is lost.

`batch_size` is the number of full-length prompts (prefixes) per forward; None picks it on
CUDA from free memory (a token budget) and uses 8 elsewhere. A unit whose prefix the KV store
holds, on the shared-prefix layout (its rows read the stored prefix in place), runs no
full-length prompt and is not counted. A call is handed to the backend in chunks of
`chunk_size` requests (default 16 x batch_size, at least 512): large enough that
requests sharing a prefix are seldom cut apart (a cut reruns that prefix once), small enough
that the response cache, written after each chunk, keeps a killed run's finished work.

Which token is an option: an option follows the prompt as a new word, i.e. after a space
unless the prompt (template + prefix) ends in whitespace. After "Answer:" the "Yes" option
is the token of " Yes"; right after Qwen's "assistant\\n" it is the token of "Yes". The id
is found by tokenising the prompt's tail with and without the option, so `choice_probs`
and the `first_options` restriction of constrained generation always read the same ids.
Generated text keeps that leading space (it is what the model wrote).

Constraints: the grammar covers the whole answer (the text after the prefix). With
`first_options`, the first generated token is restricted to the option ids above, and the
grammar must accept every one of them there (else ValueError): after "Answer:" write the
grammar as `root ::= (" Yes" | " No") ...`. A JSON schema starts with "{", so it does not
combine with `first_options`.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

from ...judge import Judge
from ...requests import CANCEL_META_KEY, Answer, Request
from . import batching
from . import identity as checkpoints
from .prefix import kv_run as kvrun
from .prefix import kv_store
from . import loading
from .prefix import runner as prefix_runner
from .prefix import units as prefixes
from .prefix.cache_layers import sharing_blocker
from .prefix import vision_cache as vision_store
from .tokens import TokenIds, placeholder_ids

logger = logging.getLogger(__name__)

#: Characters of the prompt's end re-tokenised to find which token an option is.
_TAIL_CHARS = 48
#: Contexts `validate_options` checks: an option must be one token after either.
_VALIDATION_TAILS = ("Answer:", "Answer:\n")
#: Full-length prompts per forward when batch_size is None and the device is not CUDA.
DEFAULT_BATCH_SIZE = 8


class TransformersJudge(Judge):
    """A Hugging Face vision-language model run in this process (the default backend)."""

    backend = "transformers"

    def __init__(self, model: Any, processor: Any = None, *, revision: str | None = None, dtype: Any = None,
                 device: str | None = None, device_map: Any = None, batch_size: int | None = None,
                 trust_remote_code: bool = False, cache: Any = None, progress: bool | None = None,
                 attn_implementation: str | None = None, hf_cache_dir: str | None = None,
                 prefix_reuse: bool = True, prefetch: bool | None = None, chunk_size: int | None = None,
                 vision_cache_mb: float = vision_store.DEFAULT_MB, kv_cache_mb: float = kv_store.DEFAULT_MB) -> None:
        import torch
        if model is None:
            raise ValueError("TransformersJudge needs a model: a Hub id, a local folder or a loaded model")
        commit = checkpoint = None  # a model object is known by its name only
        if isinstance(model, str) or hasattr(model, "__fspath__"):
            model_id = str(model)
            model, loaded_processor = loading.load_model_and_processor(
                model_id, revision=revision, dtype=dtype, device=device, device_map=device_map,
                trust_remote_code=trust_remote_code, attn_implementation=attn_implementation,
                hf_cache_dir=hf_cache_dir)
            processor = processor if processor is not None else loaded_processor
            commit = loading.resolved_commit(model_id, revision, hf_cache_dir)
            checkpoint = checkpoints.checkpoint_identity(model_id, commit)
        else:
            if not isinstance(model, torch.nn.Module):
                raise TypeError(f"model must be a Hub id, a folder or a torch module, got {type(model).__name__}")
            model_id = loading.model_name(model)
            if processor is None:
                raise ValueError("a model object needs its processor: TransformersJudge(model, processor)")
            if device is not None:
                model = model.to(device)
            model.eval()
        loading.check_processor(processor, model_id)
        self.family = loading.check_family(model)  # refuses known-wrong architectures, warns on unknown ones
        self.model, self.processor = model, processor
        self.tokenizer = processor.tokenizer
        self.tokenizer.padding_side = "left"  # not saved with tokenizers; generation needs it
        self.requested_revision = revision
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 or None (auto), got {batch_size}")
        self.auto_batch = batch_size is None
        self.rows = batch_size or DEFAULT_BATCH_SIZE  # full-length prompts per forward
        chunk = chunk_size if chunk_size is not None else max(512, 16 * self.rows)
        super().__init__(model_id=model_id, revision=commit or revision,
                         dtype=str(model.dtype).removeprefix("torch."), device=str(model.device),
                         batch_size=chunk, cache=cache, progress=progress)
        self.checkpoint = checkpoint
        self.processor_options = checkpoints.processor_options_digest(processor)
        self.eos_ids = loading.eos_token_ids(model, self.tokenizer)
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else self.eos_ids[0]
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.attn_implementation = getattr(model.config, "_attn_implementation", attn_implementation)
        self.prefix_reuse = prefix_reuse
        self.prefetch = batching.prefetch_pays(model) if prefetch is None else prefetch
        self._max_rows = batching.UNLIMITED_ROWS   # requests per batch, lowered after out-of-memory
        self._budget_scale = 1.0                   # share of the token budget, halved after out-of-memory
        self._option_cache: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        self._grammars = None
        self._prompts: dict[int, prefixes.Prompt] = {}
        self._token_ids = TokenIds(self.tokenizer)
        self._prefetcher: batching.Prefetcher | None = None
        # vision outputs kept across calls (shared-prefix path, families in `_hf_vision`): an image asked
        # about in several stages goes through the tower once
        # a recurrent or hybrid cache cannot be shared: such a model runs the unshared path (logged)
        self.sharing_blocker = sharing_blocker(model, model_id) if prefix_reuse else None
        self.prefix_reuse = prefix_reuse = prefix_reuse and self.sharing_blocker is None
        self.stats = prefix_runner.SharingStats()  # JudgeStats + requests run unshared for want of sharing
        self._stores(vision_cache_mb if prefix_reuse else 0, kv_cache_mb if prefix_reuse else 0)
        self._image_token_ids = placeholder_ids(processor, model.config)  # the processor's, unexpanded

    # -- pickling ----------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """Pickle the model, processor and settings, never live native or per-call handles: the
        grammar compiler (xgrammar objects do not pickle), the prefetch thread, the prompts of a
        call in flight and the stored vision outputs; `__setstate__` rebuilds them empty. The
        response cache pickles as its path (see `ResponseCache`)."""
        state = self.__dict__.copy()
        state.update(_grammars=None, _prefetcher=None, _prompts={})
        state["_store_mb"] = (self.vision_cache.max_bytes / 2**20, self.kv_cache.max_bytes / 2**20)
        for live in ("vision_cache", "kv_cache", "_runner"):
            state.pop(live, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        store_mb = state.pop("_store_mb")
        self.__dict__.update(state)
        self._stores(*store_mb)

    def _stores(self, vision_mb: float, kv_mb: float) -> None:
        """The stores kept across calls (vision outputs, prefix KV rows) and the runner using them."""
        self.vision_cache = vision_store.VisionCache(self.model, vision_mb)
        special = set(getattr(self.tokenizer, "added_tokens_decoder", {})) | set(self.tokenizer.all_special_ids)
        self.kv_cache = kv_store.PrefixKVStore(self.model, kv_mb, self.stats, special)
        self._runner = prefix_runner.PrefixRunner(self.model, self.vision_cache, self.kv_cache)

    # -- options ---------------------------------------------------------------------------
    def validate_options(self, options: Sequence[str]) -> None:
        """Every option must be one token both after a space and after whitespace (see module doc)."""
        for tail in _VALIDATION_TAILS:
            self.option_ids(tail, options)

    def option_ids(self, prompt_text: str, options: Sequence[str]) -> list[int]:
        """The token id each option would be as the next word after `prompt_text`."""
        tail = prompt_text[-_TAIL_CHARS:]
        key = (tail, tuple(options))
        if key not in self._option_cache:
            sep = "" if not tail or tail[-1].isspace() else " "
            base = self.tokenizer.encode(tail, add_special_tokens=False)
            ids = []
            for option in options:
                full = self.tokenizer.encode(tail + sep + option, add_special_tokens=False)
                if len(full) != len(base) + 1 or full[:len(base)] != base:
                    pieces = self.tokenizer.convert_ids_to_tokens(full[len(base):] if full[:len(base)] == base else full)
                    raise ValueError(f"option {option!r} is not a single token after {tail[-12:]!r} "
                                     f"(it tokenises as {pieces}); choose single-token options")
                ids.append(full[-1])
            if len(set(ids)) != len(ids):
                raise ValueError(f"options {list(options)} share token ids {ids}")
            self._option_cache[key] = ids
        return self._option_cache[key]

    # -- the two primitives ----------------------------------------------------------------------
    def _generate(self, requests: list[Request]) -> list[Answer]:
        if any(r.constraint is not None for r in requests):  # before any model work
            self._grammar_compiler().closers.check_budgets(requests)
        return self._run_in_batches("generate", requests, None)

    def _choice_probs(self, requests: list[Request], options: list[str]) -> list[dict[str, float]]:
        return self._run_in_batches("choice_probs", requests, options)

    def _choice_probs_raw(self, requests: list[Request], options: list[str]) -> list[dict[str, float]]:
        return self._run_in_batches("choice_probs_raw", requests, options)

    def _run_in_batches(self, op: str, requests: list[Request], options: list[str] | None) -> list:
        """Plan batches (grouped, sorted by size), prefetch each next one, restore the order."""
        digests: dict[tuple, str] = {}  # one memo for the call's prompts (see `Prompt.digests`)
        renders: dict[tuple, str] = {}
        texts = [self._rendered(r, renders) for r in requests]
        self._token_ids.prefetch(texts)  # the call's new texts in one tokenizer call
        self._prompts = {id(r): self._prompt(r, digests, text=text) for r, text in zip(requests, texts)}
        try:
            batches = self._batches(requests)
            out: list = [None] * len(requests)
            for k, idx in enumerate(batches):
                if self.prefetch and k + 1 < len(batches):
                    if k == 0:  # first batch on the worker alone, the next queued behind it: the two
                        # preparations would otherwise share the cores while no forward runs
                        self._worker().submit([requests[i] for i in idx])
                    self._worker().submit([requests[i] for i in batches[k + 1]])
                for i, result in zip(idx, self._forward_or_split(op, [requests[i] for i in idx], options)):
                    out[i] = result
            return out
        finally:
            if self._prefetcher is not None:
                self._prefetcher.clear()
            self._prompts = {}

    def _batches(self, requests: list[Request]) -> list[list[int]]:
        prompts = [self._prompts[id(r)] for r in requests]
        units = prefixes.make_units(prompts) if self.prefix_reuse else None
        if units is None:
            units = [prefixes.Unit([i], len(p.ids)) for i, p in enumerate(prompts)]
        budget = batching.token_budget(self.model) if self.auto_batch else None
        if budget is not None:
            budget = max(1, int(budget * self._budget_scale))
        cost = (lambda u: self._unit_tokens(u, prompts)) if budget is not None else (lambda u: 0)
        in_place = self._served_in_place(units, prompts, requests) if self.prefix_reuse else set()
        return batching.plan_batches(units, prompts, cost, max_units=self.rows, max_rows=self._max_rows,
                                     budget=budget, counted=lambda u: u.rows[0] not in in_place)

    def _served_in_place(self, units: list[prefixes.Unit], prompts: list[prefixes.Prompt],
                         requests: list[Request]) -> set[int]:
        """The units (by first row) whose prefix the KV store holds, where suffix rows read their
        prefix in place (shared-prefix attention): such a unit runs no full-length prompt and
        copies none, so `batch_size` does not count it. TerraVis' detection and evidence units
        then run as one batch, one decode for all of a call's evidence rows. Only images whose
        digest this run already holds (`digests_held`) are looked up: an image not hashed yet
        is new to the store, and hashing it here would move that work onto the critical path."""
        from ..._digests import held_digest
        if not self.kv_cache.enabled or not len(self.kv_cache) or not self._runner.shares(self.model.device):
            return set()
        held = set()
        for unit in units:
            head = prompts[unit.rows[0]]
            digests = tuple(held_digest(image) for image in requests[unit.rows[0]].images)
            if None in digests:
                continue
            if self.kv_cache.lookup(digests, head.ids[:unit.split], head.images_end, touch=False) is not None:
                held.add(unit.rows[0])
        return held

    def _unit_tokens(self, unit: prefixes.Unit, prompts: list[prefixes.Prompt]) -> int:
        """Tokens a unit holds at its peak: the prefix once, and its KV copied for every suffix."""
        head = prompts[unit.rows[0]]
        prefix = unit.split + sum(batching.image_tokens(self.processor, head.sizes))
        return prefix + sum(prefix + len(prompts[i].ids) - unit.split for i in unit.rows)

    def _worker(self) -> batching.Prefetcher:
        if self._prefetcher is None:
            self._prefetcher = batching.Prefetcher(self._prepare, self.processor,
                                                   one_thread=self.model.device.type == "cpu")
        return self._prefetcher

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

    def _forward_or_split(self, op: str, batch: list[Request], options: list[str] | None) -> list:
        """Run a batch; on out-of-memory halve it and retry each half (a lone request fails alone)."""
        try:
            return self._forward_batch(op, batch, options)
        except Exception as exc:  # only out-of-memory errors are handled; the rest re-raise
            if not batching.is_out_of_memory(exc):
                raise
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        # handled outside the except block so the traceback's tensors can be freed first; kept prefix KV goes too
        self.kv_cache.clear()
        batching.release_cuda_memory()
        if len(batch) == 1:
            logger.warning("out of memory on a single request; returning an error result: %s", message)
            return [Answer("", "error", 0) if op == "generate" else {}]
        half = len(batch) // 2
        self._max_rows = min(self._max_rows, half)
        self._budget_scale /= 2
        logger.warning("out of memory on a batch of %d; retrying as %d + %d", len(batch), half, len(batch) - half)
        return (self._forward_or_split(op, batch[:half], options)
                + self._forward_or_split(op, batch[half:], options))

    def _forward_batch(self, op: str, batch: list[Request], options: list[str] | None) -> list:
        """One model call for one batch (the unit the OOM split retries; tests inject errors here)."""
        if op == "generate":
            return self._generate_batch(batch)
        if op in ("choice_probs", "choice_probs_raw"):
            return self._probs_batch(batch, options or [], normalize=op == "choice_probs")
        raise ValueError(f"unknown operation {op!r}")

    # -- one batch -------------------------------------------------------------------------------
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
        ready = self._prefetcher.take(batch) if self._prefetcher is not None else None
        return ready if ready is not None else self._prepare(self.processor, batch)

    def _to_device(self, inputs: Any) -> Any:
        inputs = inputs.to(self.model.device)
        for key, value in inputs.items():  # pixel values in the model's dtype; ids stay integers
            if hasattr(value, "is_floating_point") and value.is_floating_point():
                inputs[key] = value.to(self.model.dtype)
        return inputs

    def _count(self, images: int, tokens: int) -> None:
        """Stats for a batch that ran (a batch lost to out-of-memory is not counted)."""
        self.stats.forward_batches += 1
        self.stats.images_encoded += images
        self.stats.prefill_tokens += tokens

    def _encoded(self, prepared: prefixes.PreparedBatch, before: int) -> int:
        """Images the tower ran on for a shared-prefix batch (the vision cache served the rest)."""
        return self.vision_cache.encoded - before if prepared.image_keys else prepared.n_images

    def _count_plain(self, inputs: Any, batch: list[Request]) -> None:
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

    def _probs_batch(self, batch: list[Request], options: list[str], normalize: bool = True) -> list[dict[str, float]]:
        """Softmax over the option ids, or (normalize=False) their share of the full softmax."""
        import torch
        with torch.inference_mode():
            logits, texts, _ = self._first_logits(batch)
        out = []
        for row, text in zip(logits, texts):
            ids = self.option_ids(text, options)
            probs = torch.softmax(row[ids], dim=-1) if normalize else torch.softmax(row, dim=-1)[ids]
            out.append(dict(zip(options, probs.tolist())))
        return out

    def _generate_batch(self, batch: list[Request]) -> list[Answer]:
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
        from .decoding.row_control import RowPlan
        d, c = request.decoding, request.constraint
        plan = RowPlan(max_new_tokens=d.max_new_tokens, temperature=d.temperature, top_p=d.top_p,
                       seed=d.seed, stop=tuple(d.stop), cancelled=request.meta.get(CANCEL_META_KEY))
        if c is not None:
            if c.first_options:
                plan.first_ids = self.option_ids(text, c.first_options)
            plan.matcher = self._grammar_compiler().matcher(c)
            plan.closer = self._grammars.closers.row(c, plan.matcher)
        return plan

    def _grammar_compiler(self):
        if self._grammars is None:  # with the closers of JSON-schema rows beside it (`_hf_forcing`)
            from .decoding.forcing import compiler_with_closers
            self._grammars = compiler_with_closers(self.tokenizer, self.vocab_size, self.eos_ids)
        return self._grammars

    # -- records -----------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """A loaded checkpoint by content (folder digest or Hub commit), never by its path or name."""
        from ...grammar import GRAMMAR_VERSION
        rules = {"processor": self.processor_options, "grammar": GRAMMAR_VERSION, "layout": prefix_runner.LAYOUT_VERSION}
        if self.checkpoint is None:
            return {**super().identity(), **rules}
        return {"backend": self.backend, "checkpoint": self.checkpoint, "dtype": self.dtype, **rules}

    def manifest(self) -> dict[str, Any]:
        """Model id, resolved commit, dtype, device, batch size and library versions."""
        return {**super().manifest(), "model": self.model_id, "revision": self.revision,
                "requested_revision": self.requested_revision,
                "batch_size": "auto" if self.auto_batch else self.rows, "chunk_size": self.batch_size,
                "prefix_reuse": self.prefix_reuse, "prefix_fallback": self.sharing_blocker,
                "prefix_attention": self._runner.attention_layout(self.model.device) if self.prefix_reuse else None,
                "attn_implementation": self.attn_implementation,
                "vision_cache_mb": self.vision_cache.max_bytes / 2**20 if self.vision_cache.enabled else 0,
                "kv_cache_mb": self.kv_cache.max_bytes / 2**20 if self.kv_cache.enabled else 0,
                "libraries": loading.library_versions(),
                "option_tokens": "an option is the next word after the prompt: after a space unless "
                                 "the prompt ends in whitespace"}
