"""Runs a prepared shared-prefix batch: the units' prefixes (vision tower included) once, then
every request's suffix against its unit's prefix cache, then greedy decoding. Positions are
explicit, so the result equals one left-padded forward over whole prompts up to float rounding
(docs/performance.md: the layout, and why windowed models run suffixes by length).
"""
from __future__ import annotations

import copy
import inspect
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ....judge import JudgeStats
from .cache_layers import windowed
from .units import PreparedBatch

if TYPE_CHECKING:  # torch is imported where it is used: importing the backend stays light
    import torch


@dataclass
class SharingStats(JudgeStats):
    """The judge's counters, plus the requests that ran unshared because the model's cache
    cannot share a prefix (`sharing_blocker`; the manifest's `prefix_fallback` says why)."""

    unshared_fallback: int = 0


#: Bumped when the shared-prefix layout changes its answers (2: exact under sliding-window and
#: chunked attention, where layout 1 was off for Gemma 3/4 and Llama 4): part of the judge's cache
#: identity, so answers of an older layout are never served again.
LAYOUT_VERSION = 2

#: Models whose images must run in a forward that starts at column 0, so no stem runs apart:
#: Gemma 3 and 4 let an image's tokens attend to each other both ways, by a mask that reads the
#: token types by absolute column, and a forward after cached columns misreads them (measured:
#: probabilities off by up to 0.04 on the tiny checkpoints).
IMAGES_FROM_COLUMN_ZERO = frozenset({"gemma3", "gemma4"})


class PrefixRunner:
    """Runs prepared batches on a model: first-token logits, then (optionally) decoding."""

    def __init__(self, model: Any, vision: Any = None, kv: Any = None) -> None:
        from transformers import DynamicCache

        from . import shared_attention
        self.model = model
        self.vision = vision  # a `VisionCache`, used for batches that carry image keys
        self.kv = kv          # a `PrefixKVStore` (`kv_store`) kept across calls, or None
        self._cache_cls = DynamicCache
        params = inspect.signature(model.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"
        inner = getattr(model, "model", None)
        self.rope_index = getattr(inner, "get_rope_index", None)
        self._rope_params = set(inspect.signature(self.rope_index).parameters) if self.rope_index else set()
        self.windowed = windowed(model)
        # a stem runs apart (`shared_stem`) on plain full-attention caches only: copying a stem row
        # per unit fails in Llama 4's chunked layer, and Gemma's images must run from column 0
        self.stems = not self.windowed and getattr(model.config, "model_type", None) not in IMAGES_FROM_COLUMN_ZERO
        # suffixes read one prefix row per unit, not a copy per request (`shared_attention`)
        self.shared_blocker = shared_attention.blocker(model)
        self._attention_configs = shared_attention.attention_configs(model) if self.shared_blocker is None else []

    # -- positions -------------------------------------------------------------------------
    def _prefix_positions(self, prefix: dict[str, torch.Tensor], vision: dict[str, torch.Tensor]):
        """(position_ids for the prefix forward, next position per unit)."""
        mask = prefix["attention_mask"]
        plain = (mask.long().cumsum(-1) - 1).clamp(min=0)
        if self.rope_index is None:
            return plain, mask.sum(-1)
        if "image_grid_thw" in vision or "video_grid_thw" in vision:
            available = {**prefix, **vision}
            kwargs = {k: v for k, v in available.items() if k in self._rope_params}
            positions, _ = self.rope_index(**kwargs)
        else:
            positions = plain.unsqueeze(0).expand(3, -1, -1)
        nxt = positions.masked_fill(mask.unsqueeze(0) == 0, -1).amax(dim=(0, 2)) + 1
        return positions, nxt

    def _shape(self, positions: torch.Tensor) -> torch.Tensor:
        """Plain (R, S) positions as the model wants them (3 axes for mrope models)."""
        return positions.unsqueeze(0).expand(3, -1, -1) if self.rope_index is not None else positions

    # -- forwards ------------------------------------------------------------------------------
    def shares(self, device: Any) -> bool:
        """Whether suffixes on `device` read a shared prefix row (else each gets a copy)."""
        import torch
        return self.shared_blocker is None and torch.device(device).type == "cpu"

    def attention_layout(self, device: Any) -> str:
        """How suffixes read their prefix on `device`, for the manifest."""
        if self.shares(device):
            return "shared: each unit's prefix read once by its rows"
        return f"copied per request ({self.shared_blocker or 'not on CPU'})"

    def attending(self, cache: Any) -> Any:
        """The context of a forward over `cache`: shared-prefix attention for a `SuffixCache`."""
        from . import shared_attention
        if isinstance(cache, shared_attention.SuffixCache):
            return shared_attention.attending(self._attention_configs, cache)
        return nullcontext()

    def first_logits(self, batch: PreparedBatch, device: Any, dtype: Any,
                     by_length: bool = False) -> tuple[torch.Tensor, dict]:
        """Next-token logits (R, V, float32) after every request's prompt, and the decoding state.
        With a prefix KV store (`kv_run`), units it holds skip their prefix forward.
        `by_length`: nothing decodes after, so suffixes may run in blocks of like length."""
        bases = None
        if self.kv is not None and self.kv.enabled:
            from .kv_run import cached_prefixes
            cache, mask, nxt, keep, bases = cached_prefixes(self, batch, device, dtype)
        else:
            cache, mask, nxt, _ = self.run_prefix(batch, device, dtype)
            keep = None
        return self.run_suffixes(cache, mask, nxt, batch, device, keep, by_length, bases)

    def run_prefix(self, batch: PreparedBatch, device: Any, dtype: Any) -> tuple:
        """The units' prefixes (vision tower included) into a fresh cache: (cache, prefix mask,
        next position per unit, the forward's position ids). A `stem` the units share runs once
        and the rest of each prefix after it: where the model `shares`, every unit reads the stem's
        row in place (so the rest attends causally from its own first column, as a whole prefix
        forward would), elsewhere the stem's row is copied to every unit first."""
        import torch

        from . import shared_attention
        prefix = {k: v.to(device) for k, v in batch.prefix.items()}
        vision = {k: (v.to(device, dtype) if v.is_floating_point() else v.to(device)) for k, v in batch.vision.items()}
        positions, nxt = self._prefix_positions(prefix, vision)
        mask, stem = prefix["attention_mask"], batch.stem
        tokens = {k: v for k, v in prefix.items() if k != "attention_mask"}
        cache = self._cache_cls(config=self.model.config)
        # one row per prefix that runs: units served by the KV store (`kv_run`) have none here
        rows = torch.zeros(int(mask.shape[0]), dtype=torch.long, device=device)
        if stem:  # text only, no pads: one row
            self.model(**{k: v[:1, :stem] for k, v in tokens.items()}, attention_mask=mask[:1, :stem],
                       position_ids=positions[..., :1, :stem], use_cache=True, logits_to_keep=1,
                       **{self.cache_kw: cache})
        if stem and self.shares(device):
            run, run_mask = shared_attention.SuffixCache.over(self.model.config, cache, rows), mask[:, stem:]
        else:
            if stem:
                cache.batch_select_indices(rows)
            run, run_mask = cache, mask
        # image keys are set only where the judge has an enabled vision cache
        with self.vision.serving(batch.image_keys) if batch.image_keys else nullcontext(), self.attending(run):
            self.model(**{k: v[:, stem:] for k, v in tokens.items()}, attention_mask=run_mask, **vision,
                       position_ids=positions[..., stem:], use_cache=True, logits_to_keep=1, **{self.cache_kw: run})
        if run is not cache:
            cache = run.joined(self.model.config)
        return cache, mask, nxt, positions

    def run_suffixes(self, cache: Any, prefix_mask: torch.Tensor, nxt: torch.Tensor, batch: PreparedBatch,
                     device: Any, keep: Any = None, by_length: bool = False,
                     bases: list | None = None) -> tuple[torch.Tensor, dict]:
        """Every request's suffix against its unit's row of the prefix cache (see module doc);
        `keep(block cache, rows, suffix lengths)` sees each block's cache after its forward.
        `by_length` runs suffixes of like length together (`_like_lengths`): fewer pads to run,
        but more blocks, each a forward per step if a decode followed. Where the model `shares`,
        the rows read the prefixes in place (`shared_attention`), each unit's *base* (per unit
        `bases`: the stored ancestor that units share, and its columns; None: its whole prefix) once."""
        import torch

        from . import shared_attention
        row_unit = batch.row_unit.to(device)
        suffix_ids, suffix_mask = batch.suffix_ids.to(device), batch.suffix_mask.to(device)
        nxt = nxt.to(device)
        lengths = suffix_mask.sum(-1)
        logits = torch.empty((len(row_unit), 0), device=device)
        groups = []
        blocks = (_by_length(lengths) if self.windowed else _like_lengths(lengths) if by_length
                  else [torch.arange(len(row_unit), device=device)])
        if isinstance(cache, shared_attention.UnitPrefixes):  # built from stored rows (`cached_prefixes`)
            shared = cache
        else:
            shared = shared_attention.UnitPrefixes.of(cache, prefix_mask, bases) if self.shares(device) else None
        for k, rows in enumerate(blocks):
            if shared is not None:  # the block's cache holds the rows' own columns, then their suffixes
                rows, block_cache, own_mask = shared.block(rows, row_unit, self.model.config)
            else:  # the last block takes the prefix cache itself, no copy
                block_cache = cache if k == len(blocks) - 1 else copy.deepcopy(cache)
                block_cache.batch_select_indices(row_unit[rows])  # repeated indices: a prefix's KV per request
                own_mask = prefix_mask[row_unit[rows]]
            width = int(lengths[rows].max())
            ids, block_mask = suffix_ids[rows, -width:], suffix_mask[rows, -width:]
            start = nxt[row_unit[rows]] - (width - lengths[rows])  # position of column 0 of the block
            pos = (start.unsqueeze(1) + torch.arange(width, device=device)).clamp(min=0) * block_mask
            mask = torch.cat([own_mask, block_mask], dim=1)
            with self.attending(block_cache):
                out = self.model(input_ids=ids, attention_mask=mask, position_ids=self._shape(pos),
                                 use_cache=True, logits_to_keep=1, **{self.cache_kw: block_cache})
            if keep is not None:
                keep(block_cache, rows, lengths[rows])
            block_logits = out.logits[:, -1, :].float()
            if logits.shape[1] == 0:
                logits = block_logits.new_empty((len(row_unit), block_logits.shape[1]))
            logits[rows] = block_logits
            groups.append(_Block(rows, block_cache, mask, nxt[row_unit[rows]] + lengths[rows]))
        return logits, {"blocks": groups}

    def decode(self, first: torch.Tensor, state: dict, control: Any, max_new_tokens: int, pad_id: int) -> torch.Tensor:
        """Greedy decoding under `control` (a `RowControl` with prompt_len 0); finished rows
        leave the batch. Returns the generated ids (R, T), pad after a row's end."""
        import torch

        from .growing_cache import adopt_growing
        n, device = first.shape[0], first.device
        generated = torch.empty((n, 0), dtype=torch.long, device=device)
        scores = first
        blocks: list[_Block] = list(state["blocks"])
        for block in blocks:  # new tokens go into spare columns: no copy of the prefix per step
            adopt_growing(block.cache, max_new_tokens)
        for step in range(max_new_tokens):
            scores = control(generated, scores)
            tokens = scores.argmax(dim=-1)
            closed = torch.tensor(control.closed, device=device)
            tokens = tokens.masked_fill(closed, pad_id)
            generated = torch.cat([generated, tokens.unsqueeze(1)], dim=1)
            done = control.stopping(generated, scores)
            if bool(done.all()) or step == max_new_tokens - 1:
                break
            scores = torch.zeros_like(scores)
            for block in blocks:
                keep = (~done[block.rows]).nonzero().squeeze(1)
                if keep.numel() == 0:
                    block.rows = keep
                    continue
                if keep.numel() < block.rows.numel():
                    block.cache.batch_select_indices(keep)
                    block.rows, block.mask, block.next = block.rows[keep], block.mask[keep], block.next[keep]
                block.mask = torch.cat([block.mask, block.mask.new_ones((block.rows.numel(), 1))], dim=1)
                with self.attending(block.cache):
                    out = self.model(input_ids=tokens[block.rows].unsqueeze(1), attention_mask=block.mask,
                                     position_ids=self._shape(block.next.unsqueeze(1)), use_cache=True,
                                     logits_to_keep=1, **{self.cache_kw: block.cache})
                block.next = block.next + 1
                scores[block.rows] = out.logits[:, -1, :].float()
            blocks = [b for b in blocks if b.rows.numel()]
        return generated


@dataclass
class _Block:
    """Requests whose suffixes ran in one forward, with their own copy of the prefix cache."""

    rows: torch.Tensor    # batch rows still decoding
    cache: Any
    mask: torch.Tensor    # (rows, columns so far)
    next: torch.Tensor    # next position per row


def _by_length(lengths: torch.Tensor) -> list[torch.Tensor]:
    """Rows grouped by suffix length: a block of equal lengths has no pad between prefix and
    suffix, the only pads a sliding window or attention chunk would count wrongly."""
    return [(lengths == n).nonzero().squeeze(1) for n in lengths.unique().tolist()]


def _like_lengths(lengths: torch.Tensor, ratio: float = 0.8) -> list[torch.Tensor]:
    """Rows grouped, longest first, so that no suffix in a block is shorter than `ratio` of the
    block's longest: TerraVis' 18 questions range from 82 to 178 tokens, a quarter of one
    left-padded block's columns otherwise."""
    import torch
    groups: list[list[int]] = []
    width = 0
    for row, n in sorted(enumerate(lengths.tolist()), key=lambda rn: -rn[1]):
        if not groups or n < ratio * width:
            groups.append([])
            width = n
        groups[-1].append(row)
    return [torch.tensor(sorted(g), device=lengths.device) for g in groups]
