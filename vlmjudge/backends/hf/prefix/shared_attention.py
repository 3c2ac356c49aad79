"""Shared-prefix attention on CPU: every suffix and decode row reads its unit's prefix keys once.

Instead of a copy of the prefix in every request's cache row, the shared part (the *base*: a
unit's prefix, or the KV store's oldest entry that several units extend) stays one row
(`SharedPrefix`), and a request's row (`SuffixCache`) holds only its columns after it. Each
layer's attention is split at the base's end and the parts merged by log-sum-exp (cascade
attention), exact up to float rounding. Only where PyTorch's CPU flash attention gives the
log-sum-exp, on plain full-attention caches under sdpa (`blocker` says why not). `attention`
is registered as the implementation `NAME`, and `attending` switches a model to it for one
forward; a layer that did not call it raises. docs/performance.md has the derivation.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from .cache_layers import cache_layers

if TYPE_CHECKING:
    import torch

#: The attention implementation name `attention` is registered under.
NAME = "vlmjudge_shared_prefix_sdpa"
#: Keyword arguments of a layer's attention call this split cannot honour.
_UNSUPPORTED = ("sliding_window", "softcap", "position_bias", "s_aux", "sinks")

_ACTIVE: ContextVar["SharedPrefix | None"] = ContextVar("vlmjudge_shared_prefix", default=None)


@dataclass
class SharedPrefix:
    """The prefix keys and values a block's rows share, one per *base*, and which base each
    row extends. Rows are sorted by base, so a base's rows are one slice."""

    keys: list[list[torch.Tensor]]     # [layer][base] (1, kv heads, base columns, head dim)
    values: list[list[torch.Tensor]]
    row_base: torch.Tensor             # (R,) non-decreasing
    runs: list[tuple[int, int, int]] = field(default_factory=list)  # (base, first row, end row)
    calls: int = 0                     # layers that ran the split in the current forward
    # per layer, every base's keys and values stacked (None: the bases differ in width); built
    # on first use and kept by `select`, so a decode stacks them once
    stacks: dict[int, tuple[torch.Tensor, torch.Tensor] | None] = field(default_factory=dict)
    # the current forward's boolean mask (held, so its id cannot be reused) and its additive
    # form: every layer of a forward gets the same mask object, converted once (`additive`);
    # emptied as each forward ends (`attending`)
    masks: tuple[Any, torch.Tensor] | None = None

    def __post_init__(self) -> None:
        import torch
        bases, counts = torch.unique_consecutive(self.row_base, return_counts=True)
        if len(bases) != len(set(bases.tolist())):
            raise ValueError("shared-prefix rows must be sorted by base")
        ends = counts.cumsum(0).tolist()
        self.runs = [(b, end - n, end) for b, n, end in zip(bases.tolist(), counts.tolist(), ends)]
        self._slots: tuple[torch.Tensor, torch.Tensor] | None = None

    def select(self, indices: torch.Tensor) -> SharedPrefix:
        """The same bases under a subset of the rows (finished rows leave a decode)."""
        return SharedPrefix(self.keys, self.values, self.row_base[indices], stacks=self.stacks)

    def stacked(self, layer: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(keys, values) of the bases that hold rows, as one batch (runs, kv heads, columns,
        dim); None when they differ in width."""
        import torch
        if layer not in self.stacks:
            keys, values = self.keys[layer], self.values[layer]
            same = len({tuple(k.shape) for k in keys}) == 1
            self.stacks[layer] = (torch.cat(keys), torch.cat(values)) if same else None
        stack = self.stacks[layer]
        if stack is None or len(self.runs) == len(stack[0]):
            return stack
        present = torch.tensor([b for b, _, _ in self.runs], device=stack[0].device)
        return stack[0][present], stack[1][present]

    def slots(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Per row, its run and its place in the run: where a batched base call holds its queries."""
        import torch
        if self._slots is None:
            counts = torch.tensor([end - first for _, first, end in self.runs], device=self.row_base.device)
            firsts = torch.tensor([first for _, first, _ in self.runs], device=self.row_base.device)
            run = torch.repeat_interleave(torch.arange(len(self.runs), device=counts.device), counts)
            self._slots = (run, torch.arange(len(run), device=counts.device) - firsts[run])
        return self._slots


@dataclass
class UnitPrefixes:
    """A batch's unit prefixes cut in two: a *base* that several units may share (their common
    ancestor in the prefix KV store, or the unit's whole prefix) and each unit's *own* columns
    after it, held right-aligned in one tensor per layer (shorter own parts padded on the left,
    hidden by `block`'s mask)."""

    unit_base: torch.Tensor            # (U,) base of each unit
    own: torch.Tensor                  # (U,) own columns of each unit
    keys: list[list[torch.Tensor]]     # [layer][base] (1, kv heads, base columns, head dim)
    values: list[list[torch.Tensor]]
    own_keys: list[torch.Tensor]       # [layer] (U, kv heads, widest own part, head dim)
    own_values: list[torch.Tensor]

    @staticmethod
    def _index(bases: list[tuple[Any, int]], lengths: list[int]) -> tuple[dict, list[int], list[int]]:
        """(base name -> (index, a unit holding it, columns), each unit's base index, own columns)."""
        first: dict[Any, tuple[int, int, int]] = {}
        unit_base, own = [], []
        for g, ((name, columns), n) in enumerate(zip(bases, lengths)):
            if not 0 < columns <= n:
                raise ValueError(f"unit {g}'s base of {columns} columns does not fit its {n}")
            index, _, held = first.setdefault(name, (len(first), g, columns))
            if held != columns:
                raise ValueError(f"units name one base with {held} and {columns} columns")
            unit_base.append(index)
            own.append(n - columns)
        return first, unit_base, own

    @classmethod
    def of(cls, cache: Any, prefix_mask: torch.Tensor, bases: list[tuple[Any, int]] | None = None) -> UnitPrefixes:
        """From a left-padded cache of the unit prefixes (pads hidden by `prefix_mask`). `bases`:
        per unit, what its base is (units naming the same share it) and its columns; None: each
        unit is its own base. Bases and own parts are views into the cache."""
        import torch
        lengths = prefix_mask.sum(-1).tolist()
        width = int(prefix_mask.shape[1])
        for g, n in enumerate(lengths):
            if not bool(prefix_mask[g, width - n:].all()):
                raise ValueError(f"prefix row {g} is not left-padded")
        if bases is None:
            bases = [(("unit", g), n) for g, n in enumerate(lengths)]
        first, unit_base, own = cls._index(bases, lengths)
        spans = [(g, width - lengths[g], columns) for _, g, columns in first.values()]  # row, start, columns
        widest = max(own)
        keys, values, own_keys, own_values = [], [], [], []
        for layer in cache.layers:
            if layer.keys is None or layer.keys.numel() == 0:
                raise RuntimeError("a cache layer holds no prefix states; shared-prefix attention needs every layer's")
            keys.append([layer.keys[g:g + 1, :, at:at + n] for g, at, n in spans])
            values.append([layer.values[g:g + 1, :, at:at + n] for g, at, n in spans])
            own_keys.append(layer.keys[:, :, width - widest:])
            own_values.append(layer.values[:, :, width - widest:])
        device = prefix_mask.device
        return cls(torch.tensor(unit_base, device=device), torch.tensor(own, device=device),
                   keys, values, own_keys, own_values)

    @classmethod
    def of_rows(cls, rows: list[Any], bases: list[tuple[Any, int]], device: Any) -> UnitPrefixes:
        """From the prefix KV store's rows (`kv_store.RowKV`), one per unit, without the
        left-padded copy of every whole row that `of` reads: a base is the first columns of a
        row holding it (a view where one stored piece holds exactly those), and only the own
        columns are copied, into the right-aligned own tensors."""
        import torch
        first, unit_base, own = cls._index(bases, [r.length for r in rows])
        widest = max(own)
        keys, values, own_keys, own_values = [], [], [], []
        for i in range(len(rows[0].layers)):
            pieces = [r.segments(i) for r in rows]
            if not all(pieces):
                raise RuntimeError("a cache layer holds no prefix states; shared-prefix attention needs every layer's")
            keys.append([_columns(pieces[g], 0, columns, 0) for _, g, columns in first.values()])
            values.append([_columns(pieces[g], 0, columns, 1) for _, g, columns in first.values()])
            k0 = pieces[0][0][0]
            layer_own_keys = k0.new_zeros((len(rows), k0.shape[1], widest, k0.shape[-1]))
            layer_own_values = torch.zeros_like(layer_own_keys)
            for g, (held, n) in enumerate(zip(pieces, own)):
                if n:
                    length = rows[g].length
                    layer_own_keys[g, :, widest - n:] = _columns(held, length - n, length, 0)[0]
                    layer_own_values[g, :, widest - n:] = _columns(held, length - n, length, 1)[0]
            own_keys.append(layer_own_keys)
            own_values.append(layer_own_values)
        return cls(torch.tensor(unit_base, device=device), torch.tensor(own, device=device),
                   keys, values, own_keys, own_values)

    def block(self, rows: torch.Tensor, row_unit: torch.Tensor, config: Any) -> tuple:
        """(rows sorted by base, their `SuffixCache` holding each row's own columns, those
        columns' mask): what a block of suffixes runs on."""
        import torch
        units = row_unit[rows]
        order = torch.argsort(self.unit_base[units], stable=True)
        rows, units = rows[order], units[order]
        cache = SuffixCache(config, SharedPrefix(self.keys, self.values, self.unit_base[units]))
        own = self.own[units]
        width = int(own.max()) if len(own) else 0
        mask = (torch.arange(width, device=own.device) >= (width - own).unsqueeze(1)).long()
        if width:  # each unit's last `width` own columns; columns of a shorter own part are masked
            for layer, held_keys, held_values in zip(cache.layers, self.own_keys, self.own_values):
                widest = int(held_keys.shape[-2])
                keys = held_keys[units, :, widest - width:]
                values = held_values[units, :, widest - width:]
                layer.lazy_initialization(keys, values)
                layer.keys, layer.values = keys, values
        return rows, cache, mask


def _columns(pieces: list[tuple[Any, Any]], start: int, end: int, which: int) -> torch.Tensor:
    """Columns [start, end) of a row stored as consecutive (keys, values) pieces, of keys
    (`which` 0) or values (1): a view when one piece holds them all, else their concatenation."""
    import torch
    parts, at = [], 0
    for piece in pieces:
        tensor = piece[which]
        n = int(tensor.shape[-2])
        lo, hi = max(start, at), min(end, at + n)
        if lo < hi:
            parts.append(tensor[..., lo - at:hi - at, :])
        at += n
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-2)


class SuffixCache(DynamicCache):
    """A `DynamicCache` holding each row's columns after its base; `shared` holds the bases."""

    def __init__(self, config: Any, shared: SharedPrefix) -> None:
        super().__init__(config=config)
        self.shared = shared

    @classmethod
    def over(cls, config: Any, base: Any, rows: torch.Tensor) -> SuffixCache:
        """An empty suffix cache whose rows all extend the one row of the cache `base` (a
        prefix stem that several units' prefixes start with)."""
        layers = base.layers
        return cls(config, SharedPrefix([[layer.keys] for layer in layers], [[layer.values] for layer in layers], rows))

    def joined(self, config: Any) -> DynamicCache:
        """The plain cache this one stands for: each row's base columns, then its own (bases of
        one width, as a stem's single row is)."""
        import torch
        out = DynamicCache(config=config)
        for i, (layer, own) in enumerate(zip(out.layers, self.layers)):
            base_keys, base_values = (torch.cat(held)[self.shared.row_base] for held in
                                      (self.shared.keys[i], self.shared.values[i]))
            keys, values = torch.cat([base_keys, own.keys], dim=-2), torch.cat([base_values, own.values], dim=-2)
            layer.lazy_initialization(keys, values)
            layer.keys, layer.values = keys, values
        return out

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        super().batch_select_indices(indices)
        self.shared = self.shared.select(indices)


def blocker(model: Any) -> str | None:
    """Why this model's suffixes cannot read a shared prefix (None: they can, on CPU)."""
    import torch
    if not hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu"):
        return "this torch has no CPU flash attention returning the log-sum-exp"
    layers = cache_layers(model)
    if not layers or any(type(layer) is not DynamicLayer for layer in layers):
        return "a cache layer is not plain full attention (sliding window, chunk or recurrent state)"
    implementations = {config._attn_implementation for config in attention_configs(model)}
    if implementations != {"sdpa"}:
        return f"attention implementation {sorted(map(str, implementations)) or 'unknown'}, not sdpa"
    return None


def attention_configs(model: Any) -> list[Any]:
    """The configs the model's attention layers read their implementation from."""
    configs: dict[int, Any] = {}
    for module in model.modules():
        config = getattr(module, "config", None)
        if isinstance(getattr(module, "layer_idx", None), int) and hasattr(config, "_attn_implementation"):
            configs[id(config)] = config
    return list(configs.values())


def register() -> None:
    """Make `NAME` an attention implementation (and its mask sdpa's); idempotent."""
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    from transformers.modeling_utils import AttentionInterface
    AttentionInterface.register(NAME, attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)


@contextmanager
def attending(configs: list[Any], cache: SuffixCache) -> Iterator[None]:
    """One forward in which the attention layers read `cache.shared` (see module doc)."""
    register()
    shared = cache.shared
    shared.calls = 0
    token = _ACTIVE.set(shared)
    before = [config._attn_implementation for config in configs]
    for config in configs:
        config._attn_implementation = NAME
    try:
        yield
    finally:
        for config, name in zip(configs, before):
            config._attn_implementation = name
        _ACTIVE.reset(token)
        shared.masks = None  # the forward's mask and its conversion are not kept past it
    if shared.calls != len(shared.keys):
        raise RuntimeError(f"{shared.calls} of {len(shared.keys)} attention layers read the shared prefix; "
                           "the others would have seen their suffix alone")


def attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, dropout: float = 0.0,
              scaling: float | None = None, is_causal: bool | None = None, **kwargs: Any) -> tuple[Any, None]:
    """sdpa, or inside `attending` the prefix/suffix split (see module doc)."""
    shared = _ACTIVE.get()
    if shared is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    refused = [k for k in _UNSUPPORTED if kwargs.get(k) is not None]
    if refused or dropout or kwargs.get("output_attentions"):
        raise RuntimeError(f"shared-prefix attention cannot honour {refused or ['dropout or attention weights']}")
    layer = getattr(module, "layer_idx", None)
    if not isinstance(layer, int) or not 0 <= layer < len(shared.keys) or key.shape[0] != query.shape[0]:
        raise RuntimeError(f"attention layer {layer!r} is not one of the shared prefix's layers")
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    out = _split(shared, layer, query, key, value, attention_mask, scaling, causal)
    shared.calls += 1
    return out.transpose(1, 2).contiguous(), None


def _split(shared: SharedPrefix, layer: int, query: Any, key: Any, value: Any, attention_mask: Any,
           scale: float | None, causal: bool = True) -> torch.Tensor:
    """(R, heads, L, dim): attention over the row's base and its own columns, merged."""
    import torch
    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    rows, heads, length, dim = query.shape
    base_keys, base_values = shared.keys[layer], shared.values[layer]
    # a decode step's base part is small next to a kernel call's fixed cost: one call for all
    # bases of one width then; longer suffixes keep one call per base (no padded queries)
    widest = max(end - first for _, first, end in shared.runs)
    batched = length == 1 and len(shared.runs) > 1 and widest * len(shared.runs) <= 2 * rows
    stack = shared.stacked(layer) if batched else None
    if stack is not None:
        out, lse = _bases_at_once(shared, stack, query, widest, scale)
    else:
        out = query.new_empty((rows, heads, length, dim))
        lse = torch.empty((rows, heads, length), dtype=torch.float32, device=query.device)
        for b, first, end in shared.runs:  # a base's queries as one sequence: the base read once
            n = end - first
            stacked = query[first:end].transpose(0, 1).reshape(1, heads, n * length, dim)
            o, l = flash(stacked, base_keys[b], base_values[b], scale=scale)[:2]
            out[first:end] = o.reshape(heads, n, length, dim).transpose(0, 1)
            lse[first:end] = l.reshape(heads, n, length).transpose(0, 1)
    causal = causal and attention_mask is None and length > 1  # as sdpa reads a missing mask
    if causal and length != key.shape[-2]:
        raise RuntimeError("a causal suffix forward must start on an empty suffix cache")
    # the mask holds the suffix's causal triangle too; splitting it off as an `is_causal` call
    # saves nothing: the CPU kernel skips only whole 512-column key blocks, and TerraVis' suffixes
    # are shorter (265 queries over 265 columns: 10.6 ms causal, 10.6 ms full, on 2 cores)
    mask = additive(shared, attention_mask, query.dtype)
    # a query whose own columns are all masked (a pad) gets output 0 and log-sum-exp 0: finite
    kv_heads = int(key.shape[1])
    if length == 1 and heads > kv_heads and (mask is None or mask.shape[1] == 1):  # a decode step:
        # each key head's queries as one sequence (one pass over its columns, not one per head)
        folded = query.reshape(rows, kv_heads, heads // kv_heads, dim)
        own, own_lse = flash(folded, key, value, attn_mask=mask, scale=scale)[:2]
        own, own_lse = own.reshape(rows, heads, 1, dim), own_lse.reshape(rows, heads, 1)
    else:
        own, own_lse = flash(query, key, value, is_causal=causal, attn_mask=mask, scale=scale)[:2]
    weight = torch.sigmoid(own_lse - lse).unsqueeze(-1).to(out.dtype)
    return out.add_((own - out).mul_(weight))


def additive(shared: SharedPrefix, mask: Any, dtype: Any) -> torch.Tensor | None:
    """The layer's mask as the flash kernel takes it (0 kept, -inf masked, in `dtype`). A
    boolean mask is converted once per forward: the layers after the first get the same mask
    object, and its conversion is a full-size fill (18 ms for a block of TerraVis' detection
    suffixes on 2 CPU cores, against 44 ms for the attention kernel it feeds)."""
    import torch
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        return mask.to(dtype)
    held = shared.masks
    if held is None or held[0] is not mask or held[1].dtype != dtype:
        converted = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, float("-inf"))
        shared.masks = held = (mask, converted)
    return held[1]


def _bases_at_once(shared: SharedPrefix, stack: tuple, query: Any, widest: int,
                   scale: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The base part of every row in one kernel call: each run's queries as one sequence, the
    runs as a batch over their stacked bases, shorter runs padded with zero queries (their
    outputs are dropped). A decode step then makes one call per layer, not one per base."""
    import torch
    rows, heads, length, dim = query.shape
    run, place = shared.slots()
    padded = query.new_zeros((len(shared.runs), widest, heads, length, dim))
    padded[run, place] = query
    padded = padded.permute(0, 2, 1, 3, 4).reshape(len(shared.runs), heads, widest * length, dim)
    o, l = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(padded, stack[0], stack[1], scale=scale)[:2]
    out = o.reshape(len(shared.runs), heads, widest, length, dim).permute(0, 2, 1, 3, 4)[run, place]
    lse = l.reshape(len(shared.runs), heads, widest, length).permute(0, 2, 1, 3)[run, place]
    return out, lse
