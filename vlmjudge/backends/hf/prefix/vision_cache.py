"""Vision-tower outputs kept across judge calls, so that an image is encoded once.

A method asks about one image in several calls (TerraVis' three stages, FAGER's QA chunks);
shared-prefix batching runs the tower once per call, this store once per image. While a prefix
forward runs, the inner model's `get_image_features` is replaced on the instance by one that
looks each image up by its pixel digest and encodes only the others; the tower attends within
each image, so features do not depend on their neighbours (up to float rounding). It serves
Qwen-VL grids and the families with one pixel array per image (`ROW_FAMILIES`); tiled inputs
encode per call. Least recently used first out within `vision_cache_mb` (`SizedLRU`).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from .sized_lru import SizedLRU

if TYPE_CHECKING:
    import torch

#: Default byte budget of the store (0 turns it off).
DEFAULT_MB = 2048


#: Families whose image inputs hold one pixel array per image, each giving a fixed number of
#: feature rows (`pooler_output[i]`; Pixtral and Gemma 4 pad the arrays and say each image's
#: size or patch positions beside them), so the store splits and rebuilds them by image.
#: Tiled inputs (InternVL, Idefics3, SmolVLM, LLaVA-OneVision, Llama 4), whose tile counts
#: per image the forward does not carry, are not split: those families encode per call.
ROW_FAMILIES = ("gemma3", "gemma4", "llava", "mistral3")


def _grid_model(model: Any) -> bool:
    """A Qwen-VL style model: an inner model with `get_image_features` and a `visual` tower
    that merges patches (its image inputs carry `image_grid_thw`)."""
    inner = getattr(model, "model", None)
    visual = getattr(inner, "visual", None)
    return callable(getattr(inner, "get_image_features", None)) and hasattr(visual, "spatial_merge_size")


def _row_model(model: Any) -> bool:
    inner = getattr(model, "model", None)
    return (getattr(getattr(model, "config", None), "model_type", None) in ROW_FAMILIES
            and callable(getattr(inner, "get_image_features", None)))


def supports(model: Any) -> bool:
    """Whether the store can serve this model's image features (Qwen-VL grids, or one row
    of pixels per image)."""
    return _grid_model(model) or _row_model(model)


def image_keys(units: Sequence[Any], prompts: Sequence[Any], pil_lists: Sequence[list]) -> list[str]:
    """The pixel digest of every image a shared-prefix batch encodes, in the order of its
    vision inputs (each unit's first request's images, unit by unit)."""
    keys = []
    for unit in units:
        head = prompts[unit.rows[0]]
        keys += [pixel_digest(head.digests, key, pil) for key, pil in zip(head.image_key, pil_lists[unit.rows[0]])]
    return keys


def pixel_digest(memo: dict[tuple, str], key: tuple, pil: Any) -> str:
    """The pixel digest of an image, once per image object (or path) in a call."""
    if key not in memo:
        from ....images import image_bytes_digest
        memo[key] = image_bytes_digest(pil)
    return memo[key]


class VisionCache(SizedLRU):
    """Per-image vision features of one model, by pixel digest, within `max_mb` megabytes."""

    def __init__(self, model: Any, max_mb: float = DEFAULT_MB) -> None:
        super().__init__(max_mb, "vision cache")
        self.enabled = max_mb > 0 and supports(model)
        self._rows = _row_model(model)  # one pixel array per image, else Qwen-VL grids
        self._row_tensor = True         # whether the encoder stacks per-image features in one tensor
        self._inner = getattr(model, "model", None)
        self._output_type: type | None = None
        self._split_deepstack = True  # whether this transformers version splits deepstack features per image
        self.encoded = 0              # images run through the tower
        self.hits = 0                 # images served from the store

    @contextmanager
    def serving(self, keys: Sequence[str]) -> Iterator[None]:
        """Within the block, the model's image encoder serves the images `keys` name (in the
        order of the forward's pixel_values) from the store, encoding only the others."""
        inner = self._inner
        original = inner.get_image_features

        def get_image_features(pixel_values, *args, **kwargs):
            if self._rows:
                return self._row_features(original, list(keys), pixel_values, args, kwargs)
            grid = args[0] if args else kwargs.pop("image_grid_thw", None)
            return self._features(original, list(keys), pixel_values, grid, kwargs)

        inner.get_image_features = get_image_features
        try:
            yield
        finally:
            del inner.get_image_features  # the class's method again

    # -- one forward's images ----------------------------------------------------------------
    def _features(self, encode: Any, keys: list[str], pixel_values: torch.Tensor, grid: torch.Tensor,
                  kwargs: dict) -> Any:
        import torch
        if grid is None or len(keys) != int(grid.shape[0]):
            raise RuntimeError(f"vision cache: {len(keys)} image keys for "
                               f"{None if grid is None else int(grid.shape[0])} images in the forward")
        patches = grid.prod(-1).tolist()
        starts = [0]
        for n in patches:
            starts.append(starts[-1] + n)
        todo: list[int] = []  # the first place of each image the store lacks
        for i, key in enumerate(keys):
            if key not in self._items and all(keys[j] != key for j in todo):
                todo.append(i)
        fresh: dict[str, tuple[Any, list[Any]]] = {}
        if todo:
            pixels = (pixel_values[:starts[-1]] if todo == list(range(len(keys))) else  # all, in order: a view
                      torch.cat([pixel_values[starts[i]:starts[i + 1]] for i in todo]))
            out = encode(pixels, grid[todo], **kwargs)
            self._output_type = type(out)
            embeds = list(out.pooler_output)
            deep = self._per_image_deepstack(getattr(out, "deepstack_features", None), embeds)
            for j, i in enumerate(todo):  # copies: a view would keep the whole batch's tensor alive
                fresh[keys[i]] = (embeds[j].clone(), [layer[j].clone() for layer in deep])
            self.encoded += len(todo)
        self.hits += len(keys) - len(todo)
        chosen = [fresh[k] if k in fresh else self._touch(k) for k in keys]
        for key, value in fresh.items():
            self._put(key, value)
        return self._output(chosen)

    def _row_features(self, encode: Any, keys: list[str], pixel_values: torch.Tensor, args: tuple,
                      kwargs: dict) -> Any:
        """Row i of `pixel_values` is image i (padded to the batch's largest, with its size or
        patch positions in a per-image tensor beside it); its features are `pooler_output[i]`."""
        import torch
        n = int(pixel_values.shape[0])
        if len(keys) != n:
            raise RuntimeError(f"vision cache: {len(keys)} image keys for {n} images")
        todo = [i for i, key in enumerate(keys) if key not in self._items and key not in keys[:i]]
        fresh: dict[str, tuple[Any, list[Any]]] = {}
        if todo:
            def rows(value: Any) -> Any:  # per-image tensors (image sizes, patch positions) follow
                return value[todo] if torch.is_tensor(value) and value.dim() and value.shape[0] == n else value
            out = encode(pixel_values[todo], *map(rows, args), **{k: rows(v) for k, v in kwargs.items()})
            self._output_type, pooled = _pooled_output_type(type(out)), out.pooler_output
            self._row_tensor = torch.is_tensor(pooled)
            for j, i in enumerate(todo):  # copies: a view would keep the whole batch's tensor alive
                fresh[keys[i]] = (pooled[j].clone(), [])
            self.encoded += len(todo)
        self.hits += len(keys) - len(todo)
        chosen = [fresh[k][0] if k in fresh else self._touch(k)[0] for k in keys]
        for key, value in fresh.items():
            self._put(key, value)
        return self._output_type(pooler_output=torch.stack(chosen) if self._row_tensor else tuple(chosen))

    def _per_image_deepstack(self, deep: Any, embeds: list[Any]) -> list[list[Any]]:
        """Deepstack features per layer, per image (transformers 5.17 returns them concatenated)."""
        if not deep:
            return []
        if isinstance(deep[0], (tuple, list)):
            self._split_deepstack = True
            return [list(layer) for layer in deep]
        import torch
        self._split_deepstack = False
        sizes = [int(e.shape[0]) for e in embeds]
        return [list(torch.split(layer, sizes)) for layer in deep]

    def _output(self, chosen: list[tuple[Any, list[Any]]]) -> Any:
        """The encoder's output object for these images, shaped as this version returns it."""
        import torch
        embeds = tuple(e for e, _ in chosen)
        layers = len(chosen[0][1]) if chosen else 0
        fields: dict[str, Any] = {"pooler_output": embeds}
        if layers:
            per_layer = [tuple(d[layer] for _, d in chosen) for layer in range(layers)]
            fields["deepstack_features"] = per_layer if self._split_deepstack else [torch.cat(p) for p in per_layer]
        return self._output_type(**fields)

    # -- the store ---------------------------------------------------------------------------
    def _size(self, value: tuple[Any, list[Any]]) -> int:
        """An image's features weigh its embeddings and its deepstack features."""
        embeds, deep = value
        return sum(int(t.numel()) * t.element_size() for t in (embeds, *deep))

    def _put(self, key: str, value: tuple[Any, list[Any]]) -> None:
        """Keep one image's features (unless they alone exceed the budget), evicting the oldest."""
        size = self._size(value)
        if self._fits(size):
            self._add(key, value, size)
            self._shrink()


def _pooled_output_type(output_type: type) -> type:
    """The output class to return pooled features in: the tower's own where it has a
    `pooler_output` field, else `BaseModelOutputWithPooling` (transformers 5.17's Mistral 3 sets
    `pooler_output` as an attribute on a plain `BaseModelOutput`, whose constructor refuses it)."""
    import dataclasses

    from transformers.modeling_outputs import BaseModelOutputWithPooling
    names = {f.name for f in dataclasses.fields(output_type)} if dataclasses.is_dataclass(output_type) else set()
    return output_type if "pooler_output" in names else BaseModelOutputWithPooling
