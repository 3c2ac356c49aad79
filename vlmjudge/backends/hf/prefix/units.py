"""Units of a shared-prefix batch: which requests share images and a token prefix, and their
CPU tensors. Requests with the same images whose tokens agree up to a point form a unit,
whose prefix runs once (`runner`); docs/performance.md shows the layout and why it is exact.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # torch is imported where it is used: importing the backend stays light
    import torch

#: Shortest shared stem run once for a batch's units (`shared_stem`): a shorter one saves less
#: than its own forward costs.
MIN_STEM = 32
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
    kv: Any = None  # what the prefix KV store serves and keeps for this batch (`kv_run.KVPlan`)
    stem: int = 0   # leading prefix columns every unit shares, run once for all (`shared_stem`)

    @property
    def prefix_tokens(self) -> int:
        """Real prefix tokens `PrefixRunner.run_prefix` runs: every prefix row's, their stem once
        (units the prefix KV store serves have no row)."""
        if not self.prefix:
            return 0
        mask = self.prefix["attention_mask"]
        return int(mask.sum()) - (int(mask.shape[0]) - 1) * self.stem


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
