"""The in-process transformers backend: any `AutoModelForImageTextToText` checkpoint as a judge.

Why in process: requests that share images and a prompt prefix (a method's stages, a QA
set's chunks) run the vision tower and that prefix once, and keep both for later calls, which
a server behind an HTTP API cannot be told to do. This module holds the judge's life cycle
and batch loop; the request side is `preparation`, the model side `batch_forward`, and the
sharing `prefix/`. docs/performance.md says what each saves and why it is exact.
"""
from __future__ import annotations

import logging
from typing import Any

from ...judge import Judge
from ...requests import Answer, Request
from . import batching, loading
from . import identity as checkpoints
from .batch_forward import BatchForward
from .core_share import CoreShare, ThreadsForCall, share_cores_default
from .preparation import RequestPreparation
from .prefix import kv_store
from .prefix import runner as prefix_runner
from .prefix import units as prefixes
from .prefix import vision_cache as vision_store
from .prefix.cache_layers import sharing_blocker
from .tokens import TokenIds, placeholder_ids

logger = logging.getLogger(__name__)

#: Full-length prompts per forward when batch_size is None and the device is not CUDA.
DEFAULT_BATCH_SIZE = 8


class TransformersJudge(RequestPreparation, BatchForward, Judge):
    """A Hugging Face vision-language model run in this process (the default backend).

    `prefix_reuse=True` (default) runs shared images and prefixes once; False runs every
    batch as one left-padded forward over whole prompts, the unshared path the shared one
    equals (a model whose cache cannot be shared falls back to it, logged). `vision_cache_mb`
    (default 2 GiB) and `kv_cache_mb` (default 4 GiB; 0 turns either off) keep vision-tower
    outputs and prefix KV rows across calls. `prefetch` (None: where a core is free for it)
    prepares the next batch's inputs on a worker thread. `batch_size` counts full-length
    prompts per forward (None: a token budget from free CUDA memory, else 8; a unit served in
    place from the KV store is not counted); `chunk_size` requests are handed over at a time
    (default 16 x batch_size, at least 512), so the response cache keeps a killed run's work.
    A CUDA out-of-memory error halves the batch and retries, so no request is lost.
    `share_cores` (None: on for a model on the CPU, unless VLMJUDGE_SHARE_CORES=0) runs each
    batch on the cores other processes leave free (`core_share`), within torch's thread count.
    Constraints cover the whole answer after the prefix; with `first_options` the grammar must
    accept each option's token first (after "Answer:", `root ::= (" Yes" | " No") ...`).
    """

    backend = "transformers"

    def __init__(self, model: Any, processor: Any = None, *, revision: str | None = None, dtype: Any = None,
                 device: str | None = None, device_map: Any = None, batch_size: int | None = None,
                 trust_remote_code: bool = False, cache: Any = None, progress: bool | None = None,
                 attn_implementation: str | None = None, hf_cache_dir: str | None = None,
                 prefix_reuse: bool = True, prefetch: bool | None = None, chunk_size: int | None = None,
                 vision_cache_mb: float = vision_store.DEFAULT_MB, kv_cache_mb: float = kv_store.DEFAULT_MB,
                 share_cores: bool | None = None) -> None:
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
        if share_cores is None:
            share_cores = model.device.type == "cpu" and share_cores_default()
        self.share_cores = bool(share_cores)
        self._core_share: CoreShare | None = None  # made on the first call, from torch's thread count then
        self._max_rows = batching.UNLIMITED_ROWS   # requests per batch, lowered after out-of-memory
        self._budget_scale = 1.0                   # share of the token budget, halved after out-of-memory
        self._option_cache: dict[tuple, Any] = {}  # option ids and token sequences, by prompt tail
        self._grammars = None
        self._prompts: dict[int, prefixes.Prompt] = {}
        self._token_ids = TokenIds(self.tokenizer)
        self._prefetcher: batching.Prefetcher | None = None
        # vision outputs kept across calls (shared-prefix path, families in `prefix.vision_cache`): an
        # image asked about in several stages goes through the tower once
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
        state.update(_grammars=None, _prefetcher=None, _prompts={}, _core_share=None)
        state["_store_mb"] = (self.vision_cache.max_bytes / 2**20, self.kv_cache.max_bytes / 2**20)
        for live in ("vision_cache", "kv_cache", "_runner"):
            state.pop(live, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore the settings and rebuild the stores empty, at their pickled budgets."""
        store_mb = state.pop("_store_mb")
        self.__dict__.update(state)
        self._stores(*store_mb)

    def _stores(self, vision_mb: float, kv_mb: float) -> None:
        """The stores kept across calls (vision outputs, prefix KV rows) and the runner using them."""
        self.vision_cache = vision_store.VisionCache(self.model, vision_mb)
        special = set(getattr(self.tokenizer, "added_tokens_decoder", {})) | set(self.tokenizer.all_special_ids)
        self.kv_cache = kv_store.PrefixKVStore(self.model, kv_mb, self.stats, special)
        self._runner = prefix_runner.PrefixRunner(self.model, self.vision_cache, self.kv_cache)

    # -- the two primitives ----------------------------------------------------------------------
    def _generate(self, requests: list[Request]) -> list[Answer]:
        """Generated answers; a constrained row's budget is checked before any model work."""
        if any(r.constraint is not None for r in requests):  # before any model work
            self._grammar_compiler().closers.check_budgets(requests)
        return self._run_in_batches("generate", requests, None)

    def _choice_probs(self, requests: list[Request], options: list[str]) -> list[dict[str, float]]:
        """Option probabilities (`vlmjudge.options`), normalised over the options."""
        return self._run_in_batches("choice_probs", requests, options)

    def _choice_probs_raw(self, requests: list[Request], options: list[str]) -> list[dict[str, float]]:
        """Each option's probability (`vlmjudge.options`) under the full-vocabulary softmax."""
        return self._run_in_batches("choice_probs_raw", requests, options)

    def _run_in_batches(self, op: str, requests: list[Request], options: list[str] | None) -> list:
        """Plan batches (grouped, sorted by size), prefetch each next one, restore the order."""
        digests: dict[tuple, str] = {}  # one memo for the call's prompts (see `Prompt.digests`)
        renders: dict[tuple, str] = {}
        texts = [self._rendered(r, renders) for r in requests]
        self._token_ids.prefetch(texts)  # the call's new texts in one tokenizer call
        self._prompts = {id(r): self._prompt(r, digests, text=text) for r, text in zip(requests, texts)}
        threads = self._threads()
        try:
            batches = self._batches(requests)
            out: list = [None] * len(requests)
            for k, idx in enumerate(batches):
                threads.before_batch()
                if self.prefetch and k + 1 < len(batches):
                    if k == 0:  # first batch on the worker alone, the next queued behind it: the two
                        # preparations would otherwise share the cores while no forward runs
                        self._worker().submit([requests[i] for i in idx])
                    self._worker().submit([requests[i] for i in batches[k + 1]])
                for i, result in zip(idx, self._forward_or_split(op, [requests[i] for i in idx], options)):
                    out[i] = result
            return out
        finally:
            threads.restore()
            if self._prefetcher is not None:
                self._prefetcher.clear()
            self._prompts = {}

    def _threads(self) -> ThreadsForCall:
        """The call's thread governor: the cores other processes leave, when `share_cores`."""
        import torch
        held = torch.get_num_threads()
        if self.share_cores:
            if self._core_share is None or self._core_share.ceiling != held:
                self._core_share = CoreShare(ceiling=held)
            return ThreadsForCall(held, self._core_share)
        return ThreadsForCall(held, None)

    def _batches(self, requests: list[Request]) -> list[list[int]]:
        """The call's batches (request positions): units planned under the row, unit and token limits."""
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
        from ...digests import held_digest
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
        """The prefetch thread, started on first use (and not pickled)."""
        if self._prefetcher is None:
            self._prefetcher = batching.Prefetcher(self._prepare, self.processor,
                                                   one_thread=self.model.device.type == "cpu")
        return self._prefetcher

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
                "share_cores": self.share_cores,
                "prefix_attention": self._runner.attention_layout(self.model.device) if self.prefix_reuse else None,
                "attn_implementation": self.attn_implementation,
                "vision_cache_mb": self.vision_cache.max_bytes / 2**20 if self.vision_cache.enabled else 0,
                "kv_cache_mb": self.kv_cache.max_bytes / 2**20 if self.kv_cache.enabled else 0,
                "libraries": loading.library_versions(),
                "option_tokens": "vlmjudge.options: bare and after a space, each form whole under teacher "
                                 "forcing, normalised over the options; mass kept"}
