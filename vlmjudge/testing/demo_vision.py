"""The demo judge's image features: three plain colour statistics carried from the pixels to
every text position, so its answers differ from photo to photo.

A random tiny tower mixes the pixels into features that barely differ between ordinary photos,
and one averaging head dilutes them further over a long question. Here the vision tower copies
three patch averages (brightness, red minus blue, green minus the others) through unchanged, the
merger writes them, centred, into residual dimensions of the visual tokens, and one first-layer
head attends to the visual tokens alone and copies them to every text position. The LM head can
then read them as ordinary weights. `TUNE_CENTRE` and `TUNE_SCALE` were measured on the tune
photos of the test data (`tune_constants`); nothing here is a judgement of the image.
"""
from __future__ import annotations

from typing import Sequence

#: Residual dimensions of the text model: 1 at visual tokens only, then the three statistics.
VIS_DIM, IMAGE_DIMS = 4, (5, 6, 7)
#: Per-statistic centre and scale (pixel units in [-1, 1]) of the tune photos, from `tune_constants`.
TUNE_CENTRE = (-0.02, 0.13, 0.03)
TUNE_SCALE = (0.27, 0.47, 0.14)
#: Constant the tower's other dimensions hold (it keeps the merger's layer norm near-linear).
_BACKGROUND = 3.0
#: Value (at the visual tokens) of one tune standard deviation of a statistic.
IMAGE_UNIT = 0.1
#: Offset that keeps the merger's GELU in its near-linear range.
_GELU_OFFSET = 4.0
#: Query/key gain of the visual head: visual keys outscore text keys by about 20 nats.
_KEY_GAIN = 3.0


def patch_statistics(pixel_values) -> tuple[float, float, float]:
    """The three statistics the tower carries, from the processor's patches (normalised
    pixels): mean brightness, mean red minus blue, mean green minus the mean of red and blue."""
    patches = pixel_values.reshape(pixel_values.shape[0], 3, -1).double()
    r, g, b = patches[:, 0].mean(), patches[:, 1].mean(), patches[:, 2].mean()
    return float((r + g + b) / 3), float(r - b), float(g - (r + b) / 2)


def _filters(torch, shape):
    """Conv weights whose responses are `patch_statistics` of one patch."""
    n = shape[2] * shape[3] * shape[4]
    out = torch.zeros(3, *shape[1:])
    for k, coefs in enumerate(((1 / 3, 1 / 3, 1 / 3), (1.0, 0.0, -1.0), (-0.5, 1.0, -0.5))):
        for c, w in enumerate(coefs):
            out[k, c] = w / n
    return out


def install_image_path(model) -> None:
    """Carry the statistics through the vision tower and merger into IMAGE_DIMS of the visual
    tokens (centred and scaled by the tune constants), and copy them to every text position."""
    import torch
    vis = model.model.visual
    proj = vis.patch_embed.proj
    proj.weight.zero_()
    proj.bias.zero_()
    proj.weight[:3] = _filters(torch, proj.weight.shape)
    width = proj.weight.shape[0]
    signs = torch.tensor([(-1.0) ** i for i in range(width)])
    vis.pos_embed.weight[:] = _BACKGROUND * signs
    vis.pos_embed.weight[:, :width % 2 + 3] = 0.0  # the rest balances: mean 0 over the width
    for block in vis.blocks:  # the tower adds nothing: its output is the patch embedding
        for layer in (block.attn.proj, block.mlp.linear_fc2):
            layer.weight.zero_()
            layer.bias.zero_()
    for merger in vis.deepstack_merger_list:
        merger.linear_fc2.weight.zero_()
        merger.linear_fc2.bias.zero_()
    _install_merger(vis.merger, width)
    _install_visual_head(model)


def _install_merger(merger, width: int) -> None:
    """fc1 rows 0-2 average each statistic over the merged patches (in GELU's linear range);
    fc2 writes them, centred and scaled, into IMAGE_DIMS and a constant into VIS_DIM."""
    merger.norm.weight.fill_(1.0)
    merger.norm.bias.zero_()
    fc1, fc2 = merger.linear_fc1, merger.linear_fc2
    groups = fc1.weight.shape[1] // width
    for k in range(3):
        fc1.weight[:, k::width] = 0.0
    for k in range(3):
        fc1.weight[k] = 0.0
        fc1.weight[k, k::width] = 1.0 / groups
        fc1.bias[k] = _GELU_OFFSET
    fc2.weight[:, :3] = 0.0
    held = width - 3 - width % 2
    spread = _BACKGROUND * (held / width) ** 0.5  # what the merger's layer norm divides by
    for k, dim in enumerate(IMAGE_DIMS):  # 0.1 per tune standard deviation, 0 at the tune centre
        gain = IMAGE_UNIT * spread / TUNE_SCALE[k]
        fc2.weight[dim] = 0.0
        fc2.weight[dim, k] = gain
        fc2.bias[dim] = -gain * (_GELU_OFFSET + TUNE_CENTRE[k] / spread)
    fc2.weight[VIS_DIM] = 0.0
    fc2.bias[VIS_DIM] = 1.0
    for dim in (0, 1, 2, 3):  # the held, marker, length and label dimensions stay empty here
        fc2.weight[dim] = 0.0
        fc2.bias[dim] = 0.0


def reserve_dims(lm, dims) -> None:
    """Keep residual dimensions `dims` for designed signals: no layer writes them, no MLP reads
    them, and only the first layer's attention may read them (its designed heads do)."""
    for i, layer in enumerate(lm.layers):
        layer.self_attn.o_proj.weight[dims] = 0.0
        layer.mlp.down_proj.weight[dims] = 0.0
        layer.mlp.gate_proj.weight[:, dims] = 0.0
        layer.mlp.up_proj.weight[:, dims] = 0.0
        if i > 0:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                proj.weight[:, dims] = 0.0


def _install_visual_head(model) -> None:
    """Layer-0 query head 2 (key/value head 1) scores visual tokens far above text tokens,
    whatever the length, and copies their IMAGE_DIMS to the same dimensions of every position."""
    lm = model.model.language_model
    emb = lm.embed_tokens.weight
    emb[:, VIS_DIM] = 0.0
    emb[:, list(IMAGE_DIMS)] = 0.0
    attn = lm.layers[0].self_attn
    d = attn.head_dim
    slow = d // 2 - 1  # the slowest rotary pair: the score barely turns over a long context
    kv, q = slice(d, 2 * d), slice(2 * d, 3 * d)
    attn.k_proj.weight[kv] = 0.0
    attn.k_proj.weight[d + slow, VIS_DIM] = 1.0
    attn.k_proj.weight[d + slow, 0] = -1.0  # text tokens hold dimension 0: their keys point away
    attn.q_proj.weight[q] = 0.0
    attn.q_proj.weight[2 * d + slow, 0] = 1.0
    attn.k_norm.weight[slow] = _KEY_GAIN
    attn.v_proj.weight[kv] = 0.0
    reserve_dims(lm, [VIS_DIM, *IMAGE_DIMS])
    for k, dim in enumerate(IMAGE_DIMS):
        attn.v_proj.weight[d + k, dim] = 1.0
        attn.o_proj.weight[dim, 2 * d + k] = 1.0
    model.lm_head.weight[:, [VIS_DIM, *IMAGE_DIMS]] = 0.0


def tune_constants(images: Sequence, processor) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Centre and scale of each statistic over `images` (the tune photos), as the processor
    presents them: what TUNE_CENTRE and TUNE_SCALE hold, rounded."""
    import torch
    stats = torch.tensor([patch_statistics(processor.image_processor(images=[im], return_tensors="pt")
                                           ["pixel_values"]) for im in images], dtype=torch.float64)
    return (tuple(round(float(v), 2) for v in stats.mean(0)),
            tuple(round(float(v), 2) for v in stats.std(0)))
