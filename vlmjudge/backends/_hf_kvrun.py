"""Shared-prefix batches served by the prefix KV store (`_hf_kvstore`): plan, run, keep.

Planning (`prepare`, on the prefetch thread): each unit of a batch is looked up by its images'
pixel digests and its prefix ids. Units the store holds no usable entry for run as before
(`_hf_prefix.prepare`: the processor, the vision tower, the prefix forward); the processor never
sees the others, whose requests' suffixes are still cut at the unit's split.

Running (`cached_prefixes`, called by `PrefixRunner.first_logits`): the fresh units' prefix
forward; then each served unit's entry, cut to the reused columns, and the unit's own tokens
after them (its *extension*) run against it, in one forward per extension length, so no pad
lies between entry and extension (a sliding window counts columns). Every unit's prefix row is
then set, right-aligned, into one left-padded cache (a sliding layer's `cumulative_length` is one
value per layer: the common width), with the 2-D mask hiding the pads and each row's next
position explicit, and the suffixes run on it as on the uncached path. Each new unit prefix (a
fresh one, or an entry extended) is kept for later calls.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from . import _hf_prefix as prefixes
from ._hf_kvstore import Entry, PrefixKVStore, RowKV, verbatim_tail
from ._hf_vision import _digest, image_keys

if TYPE_CHECKING:
    import torch


@dataclass
class Hit:
    """A unit served by a stored entry: `cut` of its tokenizer ids reused (`columns` cache columns)."""

    entry: Entry
    cut: int
    columns: int
    ext: list[int]                # the unit's prefix ids after the cut (run against the entry)
    digests: tuple[str, ...]
    ids: tuple[int, ...]          # the unit's prefix ids (its new entry's key)


@dataclass
class KVPlan:
    """What the store serves and keeps in one batch: the first `len(keep)` units run fresh (kept
    as `keep` says: digests, prefix ids, verbatim tail, clean edge); `hits` serve the rest."""

    keep: list[tuple] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)


def unit_digests(prompt: prefixes.Prompt, pils: Sequence[Any]) -> tuple[str, ...]:
    return tuple(_digest(prompt.digests, key, pil) for key, pil in zip(prompt.image_key, pils))


def prepare(processor: Any, prompts: Sequence[prefixes.Prompt], pil_lists: Sequence[list],
            units: list[prefixes.Unit], pad_id: int, store: PrefixKVStore | None,
            vision_keys: bool) -> prefixes.PreparedBatch:
    """A `PreparedBatch` whose fresh units come first and whose served ones follow (`batch.kv`)."""
    if store is None or not store.enabled:
        batch = prefixes.prepare(processor, prompts, pil_lists, units, pad_id)
        if vision_keys:
            batch.image_keys = image_keys(batch.units, prompts, pil_lists)
        return batch
    hits: list[Hit] = []
    fresh: list[prefixes.Unit] = []
    served: list[prefixes.Unit] = []
    for unit in units:
        head = prompts[unit.rows[0]]
        digests = unit_digests(head, pil_lists[unit.rows[0]])
        ids = tuple(head.ids[:unit.split])
        found = store.lookup(digests, ids, head.images_end)
        if found is None:
            fresh.append(unit)
            continue
        entry, cut = found
        columns = entry.kv.length - (len(entry.ids) - cut)
        hits.append(Hit(entry, cut, columns, list(ids[cut:]), digests, ids))
        served.append(unit)
    batch = _prepare_fresh(processor, prompts, pil_lists, fresh, served, pad_id, hits)
    if vision_keys and fresh:
        batch.image_keys = image_keys(batch.units[:len(batch.units) - len(hits)], prompts, pil_lists)
    keep = []
    for g, unit in enumerate(batch.units[:len(batch.units) - len(hits)]):
        head = prompts[unit.rows[0]]
        expanded = batch.prefix["input_ids"][g][batch.prefix["attention_mask"][g].bool()].tolist()
        tail = verbatim_tail(expanded, head.ids[:unit.split], unit.split - head.images_end)
        edge = len(expanded) == tail or expanded[len(expanded) - tail - 1] in store.special
        keep.append((unit_digests(head, pil_lists[unit.rows[0]]), tuple(head.ids[:unit.split]), tail, edge))
    batch.kv = KVPlan(keep, hits)
    return batch


def _prepare_fresh(processor: Any, prompts: Sequence[prefixes.Prompt], pil_lists: Sequence[list],
                   fresh: list[prefixes.Unit], served: list[prefixes.Unit], pad_id: int,
                   hits: list[Hit]) -> prefixes.PreparedBatch:
    """The processor over the fresh units only (rows renumbered for it, then restored), and the
    suffixes of every request, fresh units first."""
    import torch
    if not served:
        return prefixes.prepare(processor, prompts, pil_lists, fresh, pad_id)
    sub = None
    fresh_units: list[prefixes.Unit] = []
    if fresh:
        rows = sorted(r for u in fresh for r in u.rows)
        local = {r: i for i, r in enumerate(rows)}
        sub = prefixes.prepare(processor, [prompts[r] for r in rows], [pil_lists[r] for r in rows],
                               [prefixes.Unit([local[r] for r in u.rows], u.split) for u in fresh], pad_id)
        fresh_units = [prefixes.Unit([rows[i] for i in u.rows], u.split) for u in sub.units]  # `prepare` may split
    units = fresh_units + served
    n = len(prompts)
    row_unit = torch.zeros(n, dtype=torch.long)
    suffixes: list[list[int]] = [[] for _ in range(n)]
    for g, unit in enumerate(units):
        for r in unit.rows:
            row_unit[r] = g
            suffixes[r] = prompts[r].ids[unit.split:]
    width = max(len(s) for s in suffixes)
    suffix_ids = torch.full((n, width), pad_id, dtype=torch.long)
    suffix_mask = torch.zeros((n, width), dtype=torch.long)
    for r, s in enumerate(suffixes):
        suffix_ids[r, width - len(s):] = torch.tensor(s, dtype=torch.long)
        suffix_mask[r, width - len(s):] = 1
    ran = (int(sub.prefix["attention_mask"].sum()) if sub is not None else 0) + sum(len(h.ext) for h in hits)
    return prefixes.PreparedBatch(units, sub.prefix if sub is not None else {}, sub.vision if sub is not None else {},
                                  suffix_ids, suffix_mask, row_unit, [p.text for p in prompts],
                                  sub.n_images if sub is not None else 0, ran + int(suffix_mask.sum()))


# -- running --------------------------------------------------------------------------------
def cached_prefixes(runner: Any, batch: prefixes.PreparedBatch, device: Any, dtype: Any) -> tuple:
    """(cache, prefix mask, next positions) over every unit of `batch`, fresh ones run, served
    ones from the store (extended where needed); new prefixes are kept."""
    import torch
    store: PrefixKVStore = runner.kv
    plan: KVPlan | None = batch.kv
    if plan is None:
        cache, mask, nxt, _ = runner.run_prefix(batch.prefix, batch.vision, batch.image_keys, device, dtype)
        return cache, mask, nxt
    rows: list[RowKV] = []
    if plan.keep:
        cache, mask, nxt, _ = runner.run_prefix(batch.prefix, batch.vision, batch.image_keys, device, dtype)
        rows = split_rows(cache, mask, nxt)
        for row, (digests, ids, tail, edge) in zip(rows, plan.keep):
            store.put(Entry(digests, ids, row, tail, edge))
        if not plan.hits:
            return cache, mask, nxt
    rows += _served_rows(runner, plan.hits, device)
    if store.stats is not None:
        store.stats.prefix_cache_hits += len(plan.hits)
        store.stats.prefix_cache_tokens += sum(h.columns for h in plan.hits)
    return assemble(runner.model, rows, device)


def _served_rows(runner: Any, hits: list[Hit], device: Any) -> list[RowKV]:
    """Each served unit's prefix row: its entry cut to the reused columns, and its extension run
    against it (one forward per extension length)."""
    import torch
    out: list[RowKV | None] = [None] * len(hits)
    by_length: dict[int, list[int]] = {}
    for i, hit in enumerate(hits):
        by_length.setdefault(len(hit.ext), []).append(i)
    for width, idx in by_length.items():
        cut = [hits[i].entry.kv.crop(hits[i].columns) for i in idx]
        if width == 0:
            for i, row in zip(idx, cut):
                out[i] = row
            continue
        cache, mask, nxt = assemble(runner.model, cut, device)
        ids = torch.tensor([hits[i].ext for i in idx], dtype=torch.long, device=device)
        mask = torch.cat([mask, mask.new_ones((len(idx), width))], dim=1)
        pos = nxt.unsqueeze(1) + torch.arange(width, device=device)
        runner.model(input_ids=ids, attention_mask=mask, position_ids=runner._shape(pos), use_cache=True,
                     logits_to_keep=1, **{runner.cache_kw: cache})
        for i, row in zip(idx, split_rows(cache, mask, nxt + width)):
            hit = hits[i]
            tail = hit.entry.verbatim - (len(hit.entry.ids) - hit.cut) + width
            runner.kv.put(Entry(hit.digests, hit.ids, row, tail, hit.entry.clean_edge))
            out[i] = row
    return out  # type: ignore[return-value]


def split_rows(cache: Any, mask: torch.Tensor, nxt: torch.Tensor) -> list[RowKV]:
    """The rows of a left-padded cache, each its real columns only (copies: a view would keep the
    batch's tensors alive)."""
    rows = []
    lengths = mask.sum(-1).tolist()
    for g, length in enumerate(lengths):
        layers = []
        for layer in cache.layers:
            if not getattr(layer, "is_initialized", False) or layer.keys is None or layer.keys.numel() == 0:
                layers.append(None)
                continue
            n = min(int(length), int(layer.keys.shape[-2]))
            layers.append((layer.keys[g:g + 1, :, -n:].clone(), layer.values[g:g + 1, :, -n:].clone()))
        rows.append(RowKV(layers, int(length), int(nxt[g])))
    return rows


def assemble(model: Any, rows: Sequence[RowKV], device: Any) -> tuple:
    """One cache over `rows`, each right-aligned in a common width (pads on the left, hidden by
    the mask); a sliding layer holds the last min(width, W-1) columns and counts the full width."""
    import torch
    from transformers import DynamicCache
    cache = DynamicCache(config=model.config)
    width = max(r.length for r in rows)
    for i, layer in enumerate(cache.layers):
        parts = [r.layers[i] for r in rows]
        if all(p is None for p in parts):
            continue
        if any(p is None for p in parts):
            raise RuntimeError(f"prefix KV rows disagree on whether cache layer {i} holds states")
        cols = max(int(p[0].shape[-2]) for p in parts)
        keys = parts[0][0].new_zeros((len(rows), *parts[0][0].shape[1:-2], cols, parts[0][0].shape[-1]))
        values = parts[0][1].new_zeros((len(rows), *parts[0][1].shape[1:-2], cols, parts[0][1].shape[-1]))
        for g, (k, v) in enumerate(parts):
            n = int(k.shape[-2])
            keys[g, ..., cols - n:, :] = k[0]
            values[g, ..., cols - n:, :] = v[0]
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys, values
        if hasattr(layer, "cumulative_length"):
            layer.cumulative_length = width
    mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
    for g, r in enumerate(rows):
        mask[g, width - r.length:] = 1
    nxt = torch.tensor([r.next for r in rows], dtype=torch.long, device=device)
    return cache, mask, nxt
