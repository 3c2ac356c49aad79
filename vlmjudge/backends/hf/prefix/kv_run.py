"""Shared-prefix batches served by the prefix KV store (`kv_store`): plan, run, keep.

Planning (`prepare`, on the prefetch thread) looks each unit up by its images' pixel digests and
prefix ids; units without a usable entry go through the processor as before (`units.prepare`).
Running (`cached_prefixes`, from `PrefixRunner.first_logits`): the fresh units' prefix forward,
then each served entry cut to its reused columns with the unit's own tokens after it run against
it, one forward per extension length (no pad between entry and extension: a sliding window
counts columns). The rows are set right-aligned into one left-padded cache (or read in place
where attention is shared), the suffixes run on it, and every new prefix is kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from . import units as prefixes
from .kv_store import Entry, PrefixKVStore, RowKV, verbatim_tail
from .vision_cache import image_keys, pixel_digest

if TYPE_CHECKING:
    import torch


@dataclass
class Hit:
    """A unit served by a stored entry: `cut` of its tokenizer ids reused (`columns` cache columns)."""

    entry: Entry
    cut: int
    columns: int
    ext: list[int]                # the unit's prefix ids after the cut (run against the entry)


@dataclass
class KVPlan:
    """What the store serves and keeps in one batch: per unit (fresh ones first, then `hits`)
    the key and cut rules of its prefix (digests, ids, verbatim tail, clean edge), and every
    request's prompt ids (its prompt is kept too, as a child of its unit's prefix)."""

    meta: list[tuple]
    hits: list[Hit]
    row_ids: list[tuple[int, ...]]


def unit_digests(prompt: prefixes.Prompt, pils: Sequence[Any]) -> tuple[str, ...]:
    return tuple(pixel_digest(prompt.digests, key, pil) for key, pil in zip(prompt.image_key, pils))


def prepare(processor: Any, prompts: Sequence[prefixes.Prompt], pil_lists: Sequence[list],
            units: list[prefixes.Unit], pad_id: int, store: PrefixKVStore | None,
            vision_keys: bool) -> prefixes.PreparedBatch:
    """A `PreparedBatch` whose fresh units come first and whose served ones follow (`batch.kv`).
    A request whose prompt a kept entry covers beyond its unit's split (a continuation of an
    earlier call's prompt) is served as a unit of its own."""
    if store is None or not store.enabled:
        batch = prefixes.prepare(processor, prompts, pil_lists, units, pad_id)
        if vision_keys:
            batch.image_keys = image_keys(batch.units, prompts, pil_lists)
        return batch
    planned: list[tuple[prefixes.Unit, tuple, Any]] = []
    for unit in units:
        digests = unit_digests(prompts[unit.rows[0]], pil_lists[unit.rows[0]])
        alone = {}
        if len(unit.rows) > 1:
            for r in unit.rows:
                ids, end = prompts[r].ids, prompts[r].images_end
                found = store.lookup(digests, ids[:len(ids) - 1], end)
                if found is not None and found[1] > unit.split:
                    alone[r] = found
        rest = [r for r in unit.rows if r not in alone]
        if rest:
            head = prompts[rest[0]]
            planned.append((prefixes.Unit(rest, unit.split), digests,
                            store.lookup(digests, head.ids[:unit.split], head.images_end)))
        planned += [(prefixes.Unit([r], len(prompts[r].ids) - 1), digests, f) for r, f in alone.items()]
    fresh = [u for u, _, found in planned if found is None]
    hits, served, served_meta = [], [], []
    for unit, digests, found in planned:
        if found is not None:
            entry, cut = found
            if len(unit.rows) == 1:  # a lone request's tokens after the cut run as its suffix: one forward
                unit = prefixes.Unit(unit.rows, cut)
            ids = tuple(prompts[unit.rows[0]].ids[:unit.split])
            hits.append(Hit(entry, cut, entry.kv.length - (len(entry.ids) - cut), list(ids[cut:])))
            served.append(unit)
            tail = entry.verbatim - (len(entry.ids) - cut) + len(ids) - cut
            served_meta.append((digests, ids, tail, entry.clean_edge))
    batch = _prepare_fresh(processor, prompts, pil_lists, fresh, served, pad_id, hits)
    n_fresh = len(batch.units) - len(hits)
    if vision_keys and n_fresh:
        batch.image_keys = image_keys(batch.units[:n_fresh], prompts, pil_lists)
    meta = []
    for g, unit in enumerate(batch.units[:n_fresh]):
        head = prompts[unit.rows[0]]
        expanded = batch.prefix["input_ids"][g][batch.prefix["attention_mask"][g].bool()].tolist()
        tail = verbatim_tail(expanded, head.ids[:unit.split], unit.split - head.images_end)
        edge = len(expanded) == tail or expanded[len(expanded) - tail - 1] in store.special
        meta.append((unit_digests(head, pil_lists[unit.rows[0]]), tuple(head.ids[:unit.split]), tail, edge))
    batch.kv = KVPlan(meta + served_meta, hits, [tuple(p.ids) for p in prompts])
    return batch


def _prepare_fresh(processor: Any, prompts: Sequence[prefixes.Prompt], pil_lists: Sequence[list],
                   fresh: list[prefixes.Unit], served: list[prefixes.Unit], pad_id: int,
                   hits: list[Hit]) -> prefixes.PreparedBatch:
    """The processor over the fresh units only (rows renumbered for it, then restored), and the
    suffixes of every request, fresh units first."""
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
    row_unit, suffix_ids, suffix_mask = prefixes.suffix_layout(prompts, units, n, pad_id)
    ran = (sub.prefix_tokens if sub is not None else 0) + sum(len(h.ext) for h in hits)
    return prefixes.PreparedBatch(units, sub.prefix if sub is not None else {}, sub.vision if sub is not None else {},
                                  suffix_ids, suffix_mask, row_unit, [p.text for p in prompts],
                                  sub.n_images if sub is not None else 0, ran + int(suffix_mask.sum()),
                                  stem=sub.stem if sub is not None else 0)


# -- running --------------------------------------------------------------------------------
def cached_prefixes(runner: Any, batch: prefixes.PreparedBatch, device: Any, dtype: Any) -> tuple:
    """(cache, prefix mask, next positions, keep, bases) over every unit of `batch`: fresh ones
    run, served ones from the store (extended where needed), new prefixes kept. `keep` keeps
    each request's prompt after its suffix forward (`PrefixRunner.run_suffixes` calls it).
    `bases` names, per unit, the oldest stored ancestor its row extends and that ancestor's
    columns (units of one ancestor share them, `_base`), or the unit itself; None when every
    unit is fresh. Where the runner `shares`, a batch with served units gets their
    `UnitPrefixes` (rows read in place) as its cache, and no mask."""
    store: PrefixKVStore = runner.kv
    plan: KVPlan | None = batch.kv
    if plan is None:
        cache, mask, nxt, _ = runner.run_prefix(batch, device, dtype)
        return cache, mask, nxt, None, None
    rows: list[RowKV] = []
    n_fresh = len(plan.meta) - len(plan.hits)
    if n_fresh:
        cache, mask, nxt, _ = runner.run_prefix(batch, device, dtype)
        for row, (digests, ids, tail, edge) in zip(split_rows(cache, mask, nxt), plan.meta):
            kept = store.put(Entry(digests, ids, row, tail, edge))
            rows.append(kept.kv if kept is not None else row)
    if plan.hits:
        rows += _served_rows(runner, plan, device)
        if store.stats is not None:
            store.stats.prefix_cache_hits += len(plan.hits)
            store.stats.prefix_cache_tokens += sum(h.columns for h in plan.hits)
    bases = [_base(r, g) for g, r in enumerate(rows)] if plan.hits else None
    if plan.hits and runner.shares(device):  # rows read in place: no padded copy of each whole row
        import torch

        from .shared_attention import UnitPrefixes
        cache = UnitPrefixes.of_rows(rows, bases, device)
        mask, nxt = None, torch.tensor([r.next for r in rows], dtype=torch.long, device=device)
    elif plan.hits:
        cache, mask, nxt = assemble(runner.model, rows, device)
    row_unit = batch.row_unit.tolist()

    def keep(block_cache: Any, block_rows: torch.Tensor, lengths: torch.Tensor) -> None:
        for j, (r, n) in enumerate(zip(block_rows.tolist(), lengths.tolist())):
            g = row_unit[r]
            digests, ids, tail, edge = plan.meta[g]
            if store.has((digests, ids)):
                row = extract(block_cache, j, n, rows[g].next + n, rows[g])
                store.put(Entry(digests, plan.row_ids[r], row, tail + n, edge, parent=(digests, ids)))
    return cache, mask, nxt, keep, bases


def _base(row: RowKV, unit: int) -> tuple[Any, int]:
    """A unit's shared-attention base: the oldest stored ancestor its row extends, and its
    columns. TerraVis' evidence rows each extend their own detection prompt, and those all
    extend their image's prefix: naming the image prefix lets an image's rows read it once."""
    root = row
    while root.parent is not None:
        root = root.parent
    return (id(root), root.length) if root is not row else (("unit", unit), row.length)


def _served_rows(runner: Any, plan: KVPlan, device: Any) -> list[RowKV]:
    """Each served unit's prefix row: its entry cut to the reused columns, and its extension run
    against it (one forward per extension length), kept as a child of that entry."""
    import torch
    hits = plan.hits
    first = len(plan.meta) - len(hits)
    out: list[RowKV | None] = [None] * len(hits)
    by_length: dict[int, list[int]] = {}
    for i, hit in enumerate(hits):
        by_length.setdefault(len(hit.ext), []).append(i)
    for width, idx in by_length.items():
        cut = [hits[i].entry.kv.crop(hits[i].columns) for i in idx]
        rows = cut
        if width:
            cache, mask, nxt = assemble(runner.model, cut, device)
            ids = torch.tensor([hits[i].ext for i in idx], dtype=torch.long, device=device)
            mask = torch.cat([mask, mask.new_ones((len(idx), width))], dim=1)
            pos = nxt.unsqueeze(1) + torch.arange(width, device=device)
            runner.model(input_ids=ids, attention_mask=mask, position_ids=runner._shape(pos), use_cache=True,
                         logits_to_keep=1, **{runner.cache_kw: cache})
            rows = [extract(cache, j, width, row.next + width, row) for j, row in enumerate(cut)]
        for i, row in zip(idx, rows):
            digests, ids, tail, edge = plan.meta[first + i]
            if ids != hits[i].entry.ids:  # a new prefix: kept, its entry's child
                kept = runner.kv.put(Entry(digests, ids, row, tail, edge, parent=hits[i].entry.key))
                row = kept.kv if kept is not None else row
            out[i] = row
    return out  # type: ignore[return-value]


def _sliding(cache: Any) -> tuple[bool, ...]:
    return tuple(bool(getattr(layer, "is_sliding", False)) for layer in cache.layers)


def extract(cache: Any, j: int, own: int, next_pos: int, parent: RowKV | None) -> RowKV:
    """Row j of a cache whose last `own` columns are that row's new tokens after `parent`: its
    full layers' new columns and its sliding layers' last window (copies: a view would keep the
    batch's tensors alive)."""
    base = parent.length if parent is not None else 0
    sliding = _sliding(cache)
    layers = []
    for i, layer in enumerate(cache.layers):
        if not getattr(layer, "is_initialized", False) or layer.keys is None or layer.keys.numel() == 0:
            layers.append(None)
            continue
        n = min(base + own, int(layer.keys.shape[-2])) if sliding[i] else own
        layers.append((layer.keys[j:j + 1, :, -n:].clone(), layer.values[j:j + 1, :, -n:].clone()))
    return RowKV(layers, base + own, next_pos, sliding, parent)


def split_rows(cache: Any, mask: torch.Tensor, nxt: torch.Tensor) -> list[RowKV]:
    """The rows of a left-padded cache, each its real columns only."""
    return [extract(cache, g, int(n), int(nxt[g]), None) for g, n in enumerate(mask.sum(-1).tolist())]


def assemble(model: Any, rows: Sequence[RowKV], device: Any) -> tuple:
    """One cache over `rows`, each right-aligned in a common width (pads on the left, hidden by
    the mask); a sliding layer holds the last min(width, W-1) columns and counts the full width."""
    import torch
    from transformers import DynamicCache
    cache = DynamicCache(config=model.config)
    width = max(r.length for r in rows)
    for i, layer in enumerate(cache.layers):
        parts = [r.segments(i) for r in rows]
        if not any(parts):
            continue
        if not all(parts):
            raise RuntimeError(f"prefix KV rows disagree on whether cache layer {i} holds states")
        cols = max(sum(int(k.shape[-2]) for k, _ in p) for p in parts)
        k0, v0 = parts[0][0]
        keys = k0.new_zeros((len(rows), *k0.shape[1:-2], cols, k0.shape[-1]))
        values = v0.new_zeros((len(rows), *v0.shape[1:-2], cols, v0.shape[-1]))
        for g, pieces in enumerate(parts):
            at = cols - sum(int(k.shape[-2]) for k, _ in pieces)
            for k, v in pieces:
                n = int(k.shape[-2])
                keys[g, ..., at:at + n, :] = k[0]
                values[g, ..., at:at + n, :] = v[0]
                at += n
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys, values
        if hasattr(layer, "cumulative_length"):
            layer.cumulative_length = width
    mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
    for g, r in enumerate(rows):
        mask[g, width - r.length:] = 1
    nxt = torch.tensor([r.next for r in rows], dtype=torch.long, device=device)
    return cache, mask, nxt
