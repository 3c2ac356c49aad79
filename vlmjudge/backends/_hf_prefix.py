"""Shared-prefix batching: run the images and prompt text that several requests share once.

Requests with the same images whose token sequences agree up to a point (the 18 TerraVis
checks of one image, the QA chunks of one FAGER image) form a *unit*; a lone request is a
unit whose suffix is its last token. A batch of units runs as two forwards:

1. the units' prefixes, left-padded, vision tower included, filling a `DynamicCache` (where
   prefixes of one length start with the same text before their images, as a system prompt
   does, that *stem* runs first, once, and every unit's prefix continues from it: `shared_stem`);
2. every request's suffix against its unit's prefix: the cache rows are selected per request
   (`batch_select_indices` with repeated indices, i.e. the prefix KV expanded over the
   suffixes), and the suffixes are left-padded *within their block*, so the layout of a row is
   `[pad | prefix | pad | suffix]`. The 2-D attention mask hides both pads, and the last column
   holds every row's next-token logits, so generation appends after it.

A sliding window or an attention chunk (Gemma 3/4, Llama 4) counts cache columns, so a pad
between prefix and suffix would shift what a row sees. For such models the suffixes run in
blocks of equal length, each against its own copy of the prefix cache: every row is then
`[pad | prefix | suffix]`, leading pads only, which is exact. A batch that only reads next-token
probabilities (no decode follows) runs its suffixes in blocks of like length on any model, so
fewer pads run. The processor runs once over
all the units' first requests, so it pads every vision input (pixel values and their masks,
image sizes, tile counts) across units as it does for a plain batch. A recurrent or hybrid
cache (Qwen3.5's linear attention) cannot be shared: `sharing_blocker` names why, and the
judge then runs the unshared path.

On CPU, a model whose every cache layer is plain full attention skips the copies of step 2:
each suffix row's cache holds only its own columns, and attention reads each unit's prefix once
for all the unit's rows, merged exactly with the row's own part (`_hf_shared_attention`; the
manifest's `prefix_attention` says which layout ran, and why).

Positions are explicit, never inferred from padded columns: the multimodal rotary positions
of Qwen-VL models (3 axes) come from the model's own `get_rope_index` for the prefix, and
suffix and generated tokens continue from each prefix's next position (text tokens carry the
same value on every axis); plain models count real tokens. The result equals the unshared
path (one left-padded forward over whole prompts) up to float rounding.
"""
from __future__ import annotations

import copy
import inspect
import logging
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from ..judge import JudgeStats

logger = logging.getLogger(__name__)

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

#: Shortest shared stem run once for a batch's units (`shared_stem`): a shorter one saves less
#: than its own forward costs.
MIN_STEM = 32
#: Models whose images must run in a forward that starts at column 0, so no stem runs apart:
#: Gemma 3 and 4 let an image's tokens attend to each other both ways, by a mask that reads the
#: token types by absolute column, and a forward after cached columns misreads them (measured:
#: probabilities off by up to 0.04 on the tiny checkpoints).
IMAGES_FROM_COLUMN_ZERO = frozenset({"gemma3", "gemma4"})
#: Per-token processor outputs that are padded like input_ids; the rest are stacked (pixels).
_TOKEN_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids", "token_type_ids")


@dataclass
class Prompt:
    """One request as the planner sees it: text, tokens (image placeholders unexpanded),
    the identity of its images and where its last image placeholder ends."""

    text: str
    ids: list[int]
    image_key: tuple
    images_end: int
    sizes: tuple[tuple[int, int], ...] = ()   # (height, width) of each image
    # pixel digests by image identity, shared by the prompts of one call (and only that call:
    # an identity such as id(image) means nothing once the call is over)
    digests: dict[tuple, str] = field(default_factory=dict, repr=False)
    # leading tokens that may run once for several units (`shared_stem`): those before its first
    # image placeholder, or 0 on a model that must see an image's prompt from column 0
    stem_limit: int = 0

    @property
    def pixels(self) -> int:
        return sum(h * w for h, w in self.sizes)


@dataclass
class Unit:
    """Requests (positions in a batch) that share images and `ids[:split]`."""

    rows: list[int]
    split: int


def image_key(images: Sequence[Any]) -> tuple:
    """Images are shared when they are the same objects (or the same file path)."""
    return tuple(("path", str(x)) if isinstance(x, str) or hasattr(x, "__fspath__") else ("obj", id(x))
                 for x in images)


def make_prompt(text: str, ids: list[int], images: Sequence[Any], pils: Sequence[Any],
                image_token_ids: set[int], stems: bool = True) -> Prompt:
    """`stems`: whether the model may run a prompt's text before its images apart (`PrefixRunner.stems`)."""
    return Prompt(text, ids, image_key(images), images_end(ids, image_token_ids),
                  tuple((p.height, p.width) for p in pils),
                  stem_limit=images_start(ids, image_token_ids) if stems else 0)


def images_end(ids: Sequence[int], image_token_ids: set[int]) -> int:
    """Where the last image placeholder of `ids` ends (0: none). Most prompts of a run are text
    only (severity, FAGER's answers), so one set test in C clears those before any scan; the
    scan runs from the end, where an image prompt's text after its last image is short."""
    if image_token_ids.isdisjoint(ids):
        return 0
    return next(i + 1 for i in range(len(ids) - 1, -1, -1) if ids[i] in image_token_ids)


def images_start(ids: Sequence[int], image_token_ids: set[int]) -> int:
    """Where the first image placeholder of `ids` starts (len(ids): none)."""
    if image_token_ids.isdisjoint(ids):
        return len(ids)
    return next(i for i, token in enumerate(ids) if token in image_token_ids)


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common start of two id sequences of one type (64 at a time, then one by one)."""
    n, i = min(len(a), len(b)), 0
    while i + 64 <= n and a[i:i + 64] == b[i:i + 64]:
        i += 64
    while i < n and a[i] == b[i]:
        i += 1
    return i


def make_units(prompts: Sequence[Prompt]) -> list[Unit] | None:
    """Group prompts into units; None when a prompt cannot be split (it ends in an image)."""
    by_key: dict[tuple, list[int]] = {}
    for i, p in enumerate(prompts):
        if p.images_end >= len(p.ids):
            return None
        by_key.setdefault(p.image_key, []).append(i)
    units: list[Unit] = []
    for rows in by_key.values():
        rows.sort(key=lambda i: prompts[i].ids)  # lexicographic: a set's common prefix is its ends'
        _split_group(prompts, rows, units)
    units.sort(key=lambda u: min(u.rows))
    return units


def _split_group(prompts: Sequence[Prompt], rows: list[int], out: list[Unit]) -> None:
    """One unit when the sorted rows share a prefix covering their images; else split the rows
    where neighbours share least, and recurse."""
    if len(rows) == 1:
        out.append(Unit(rows, len(prompts[rows[0]].ids) - 1))
        return
    first, last = prompts[rows[0]].ids, prompts[rows[-1]].ids
    split = min(common_prefix_length(first, last), min(len(prompts[i].ids) for i in rows) - 1)
    if split >= max(1, max(prompts[i].images_end for i in rows)):
        out.append(Unit(list(rows), split))
        return
    common = [common_prefix_length(prompts[a].ids, prompts[b].ids) for a, b in zip(rows, rows[1:])]
    cut = common.index(min(common)) + 1
    _split_group(prompts, rows[:cut], out)
    _split_group(prompts, rows[cut:], out)


@dataclass
class PreparedBatch:
    """CPU tensors for one shared-prefix batch (built off the main thread by the prefetcher)."""

    units: list[Unit]
    prefix: dict[str, torch.Tensor]        # input_ids, attention_mask, [mm_token_type_ids] (G, Lp)
    vision: dict[str, torch.Tensor]        # pixel_values, image_grid_thw, ... (stacked over units)
    suffix_ids: torch.Tensor               # (R, S), left-padded within the suffix block
    suffix_mask: torch.Tensor              # (R, S)
    row_unit: torch.Tensor                 # (R,) the unit of each request
    texts: list[str]
    n_images: int
    prefill_tokens: int                    # real tokens run: prefixes once, plus every suffix
    extra: dict[str, Any] = field(default_factory=dict)
    image_keys: list[str] = field(default_factory=list)  # pixel digest per image, for a vision cache
    kv: Any = None  # what the prefix KV store serves and keeps for this batch (`_hf_kvrun.KVPlan`)
    stem: int = 0   # leading prefix columns every unit shares, run once for all (`shared_stem`)

    @property
    def prefix_tokens(self) -> int:
        """Real prefix tokens `PrefixRunner.run_prefix` runs: every unit's, their stem once."""
        return int(self.prefix["attention_mask"].sum()) - (len(self.units) - 1) * self.stem if self.prefix else 0


def processor_inputs(processor: Any, texts: Sequence[str], image_lists: Sequence[list], **kwargs: Any) -> Any:
    """The processor's padded tensors for `texts`, with one image list per text (a flat list
    would be read as all the images of one sample by Gemma and Idefics processors)."""
    call: dict[str, Any] = {"text": list(texts), "return_tensors": "pt", "padding": True, **kwargs}
    if any(image_lists):
        call["images"] = [list(images) for images in image_lists]
    return processor(**call)


class SplitMismatch(RuntimeError):
    """The processor's ids differ from the tokenizer's after a unit's split point."""


def prepare(processor: Any, prompts: Sequence[Prompt], pil_lists: Sequence[list], units: list[Unit],
            pad_id: int) -> PreparedBatch:
    """Run the processor once over the units' heads (their images, the first request's text),
    so that it pads every vision input (pixel values, pixel masks, image sizes) across units,
    and cut each head's expanded ids at the unit's split; suffixes are the requests' own tokens
    after it. A unit whose expanded ids do not end in its tokenizer ids (a processor that
    re-tokenises around an image, e.g. Gemma 3's newlines, merging across the split) runs
    its requests as units of their own."""
    try:
        return _prepare_units(processor, prompts, pil_lists, units, pad_id)
    except SplitMismatch as bad:
        unit = units[int(str(bad))]
        if len(unit.rows) == 1:
            raise RuntimeError("the processor's token ids differ from the tokenizer's outside the image "
                               "placeholders; shared-prefix batching cannot split this prompt") from None
        alone = [Unit([r], len(prompts[r].ids) - 1) for r in unit.rows]
        rest = [u for u in units if u is not unit] + alone
        return prepare(processor, prompts, pil_lists, sorted(rest, key=lambda u: min(u.rows)), pad_id)


def _prepare_units(processor: Any, prompts: Sequence[Prompt], pil_lists: Sequence[list], units: list[Unit],
                   pad_id: int) -> PreparedBatch:
    heads = [prompts[u.rows[0]] for u in units]
    enc = processor_inputs(processor, [h.text for h in heads], [pil_lists[u.rows[0]] for u in units])
    per_unit = []
    for g, (unit, head) in enumerate(zip(units, heads)):
        real = enc["attention_mask"][g].bool() if "attention_mask" in enc else slice(None)
        ids = enc["input_ids"][g][real].tolist()
        cut = unit.split + len(ids) - len(head.ids)  # the image placeholders' expansion lies before it
        if cut < 0 or ids[cut:] != head.ids[unit.split:]:
            raise SplitMismatch(str(g))
        per_unit.append({k: enc[k][g][real][:cut] for k in _TOKEN_KEYS if k in enc and k != "attention_mask"})
    prefix = _left_pad(per_unit, pad_id)
    vision = {k: v for k, v in enc.items() if k not in _TOKEN_KEYS}
    n = sum(len(u.rows) for u in units)
    row_unit, suffix_ids, suffix_mask = suffix_layout(prompts, units, n, pad_id)
    batch = PreparedBatch(units, prefix, vision, suffix_ids, suffix_mask, row_unit, [p.text for p in prompts],
                          sum(len(pil_lists[u.rows[0]]) for u in units), 0,
                          stem=shared_stem([u["input_ids"].tolist() for u in per_unit], heads))
    batch.prefill_tokens = batch.prefix_tokens + int(suffix_mask.sum())
    return batch


def shared_stem(rows: Sequence[list[int]], heads: Sequence[Prompt]) -> int:
    """How many leading tokens every unit's prefix shares before its first image (TerraVis' system
    prompt and chat header, 450 tokens under Qwen3-VL's template): `run_prefix` runs them once,
    not once per unit. 0 for a single unit, a stem under `MIN_STEM` tokens, or prefixes of
    different lengths (left pads would then lie between the stem and the rest). `rows` are the
    processor's ids; the stem also stays where they equal the tokenizer's (`heads`), so no
    expanded or re-tokenised image placeholder falls inside it."""
    if len(rows) < 2 or len({len(r) for r in rows}) != 1:
        return 0
    first = rows[0]
    n = min(min(h.stem_limit for h in heads), len(first) - 1)  # the rest keeps a token to run
    for row, head in zip(rows, heads):
        n = min(n, common_prefix_length(row[:n], head.ids[:n]), common_prefix_length(row[:n], first[:n]))
    return n if n >= MIN_STEM else 0


def suffix_layout(prompts: Sequence[Prompt], units: Sequence[Unit], n: int, pad_id: int):
    """(row_unit, suffix_ids, suffix_mask): each row's unit, and its tokens after the unit's split
    left-padded to one width; fresh and KV-store-served prefixes share this layout."""
    import torch
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
    return row_unit, suffix_ids, suffix_mask


def _left_pad(rows: list[dict[str, torch.Tensor]], pad_id: int) -> dict[str, torch.Tensor]:
    import torch
    width = max(int(r["input_ids"].shape[0]) for r in rows)
    out: dict[str, torch.Tensor] = {}
    for key in {k for r in rows for k in r}:
        fill = pad_id if key == "input_ids" else 0
        dtype = next(r[key].dtype for r in rows if key in r)
        t = torch.full((len(rows), width), fill, dtype=dtype)
        for g, r in enumerate(rows):
            n = int(r["input_ids"].shape[0])
            if key in r:
                t[g, width - n:] = r[key]
            elif key == "attention_mask":
                t[g, width - n:] = 1
        out[key] = t
    if "attention_mask" not in out:
        out["attention_mask"] = (out["input_ids"] != pad_id).long()
    return out


def _cache_layers(model: Any) -> list[Any]:
    from transformers import DynamicCache
    return list(getattr(DynamicCache(config=model.config), "layers", []))


def windowed(model: Any) -> bool:
    """Whether some attention layer sees a sliding window or a chunk (its cache layer keeps a
    window): suffixes then run in blocks of equal length, so no pad lies inside a window."""
    return any("Sliding" in type(layer).__name__ or "Chunk" in type(layer).__name__
               for layer in _cache_layers(model))


def sharing_blocker(model: Any, model_id: str = "") -> str | None:
    """Why this model cannot share a prefix (logged), or None: a recurrent or hybrid cache
    (linear attention, state-space layers) cannot be copied per request, and padding inside
    it would run through the recurrent state."""
    for layer in _cache_layers(model):
        if not callable(getattr(layer, "batch_select_indices", None)):
            reason = f"recurrent cache layer {type(layer).__name__}"
            logger.warning("%s cannot share prompt prefixes (%s); running every prompt unshared",
                           model_id or type(model).__name__, reason)
            return reason
    return None


class PrefixRunner:
    """Runs prepared batches on a model: first-token logits, then (optionally) decoding."""

    def __init__(self, model: Any, vision: Any = None, kv: Any = None) -> None:
        from transformers import DynamicCache

        from . import _hf_shared_attention as shared_attention
        self.model = model
        self.vision = vision  # a `VisionCache`, used for batches that carry image keys
        self.kv = kv          # a `PrefixKVStore` (`_hf_kvstore`) kept across calls, or None
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
        # suffixes read one prefix row per unit, not a copy per request (`_hf_shared_attention`)
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
        from . import _hf_shared_attention as shared_attention
        if isinstance(cache, shared_attention.SuffixCache):
            return shared_attention.attending(self._attention_configs, cache)
        return nullcontext()

    def first_logits(self, batch: PreparedBatch, device: Any, dtype: Any,
                     by_length: bool = False) -> tuple[torch.Tensor, dict]:
        """Next-token logits (R, V, float32) after every request's prompt, and the decoding state.
        With a prefix KV store (`_hf_kvrun`), units it holds skip their prefix forward.
        `by_length`: nothing decodes after, so suffixes may run in blocks of like length."""
        bases = None
        if self.kv is not None and self.kv.enabled:
            from ._hf_kvrun import cached_prefixes
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

        from . import _hf_shared_attention as shared_attention
        prefix = {k: v.to(device) for k, v in batch.prefix.items()}
        vision = {k: (v.to(device, dtype) if v.is_floating_point() else v.to(device)) for k, v in batch.vision.items()}
        positions, nxt = self._prefix_positions(prefix, vision)
        mask, stem = prefix["attention_mask"], batch.stem
        tokens = {k: v for k, v in prefix.items() if k != "attention_mask"}
        cache = self._cache_cls(config=self.model.config)
        rows = torch.zeros(len(batch.units), dtype=torch.long, device=device)
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
        the rows read the prefixes in place (`_hf_shared_attention`), each unit's *base* (per unit
        `bases`: the stored ancestor that units share, and its columns; None: its whole prefix) once."""
        import torch

        from . import _hf_shared_attention as shared_attention
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

        from ._hf_growing import adopt_growing
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
