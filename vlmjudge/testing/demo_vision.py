"""The demo judge's image features: four plain statistics carried from the pixels to every
text position, so its answers differ from photo to photo and follow blur and noise.

A random tiny tower mixes the pixels into features that barely differ between ordinary photos,
and one averaging head dilutes them further over a long question. Here the patch embedding
computes three colour averages (brightness, red minus blue, green minus the others) and eight
small checkerboard filters; the tower passes them through unchanged; the merger takes each
filter response's size (a pair of GELUs is an even function of its input) and writes the four
statistics, centred, into residual dimensions of the visual tokens; one first-layer head attends
to the visual tokens alone and copies them to every text position. The fourth, detail, is the
4-pixel checkerboards' energy minus twice the 2-pixel ones': blur removes the first, noise adds
more to the second, so both lower it. `TUNE_CENTRE` and `TUNE_SCALE` were measured on the tune
photos of the test data (`tune_constants`); nothing here is a judgement of the image.
"""
from __future__ import annotations

from typing import Sequence

#: Residual dimensions of the text model: 1 at visual tokens only, then the four statistics.
VIS_DIM, IMAGE_DIMS = 4, (5, 6, 7, 8)
#: Per-statistic centre and scale of the tune photos, from `tune_constants` (colour in pixel
#: units in [-1, 1], detail in thousandths of them).
TUNE_CENTRE = (-0.02, 0.13, 0.03, 3.48)
TUNE_SCALE = (0.27, 0.47, 0.14, 3.77)
#: Pixels the demo processor keeps at most (256 x 256, 64 visual tokens): below this a photo is
#: seen at its own resolution, so a blur or noise of a few pixels reaches the filters.
PIXEL_BUDGET = 256 * 256
#: Patch side and frames per patch of the tiny Qwen3-VL tower (`build_tiny_vlm`).
PATCH, FRAMES = 16, 2
#: Weight of the 2-pixel checkerboards' energy in the detail statistic (the 4-pixel ones count 1).
FINE_WEIGHT = 2.0
#: Gain of the merger's size units: a filter response of 1/1000 (pixel units) is one unit.
DETAIL_GAIN = 1000.0
#: Tower channels: the three colour statistics, a reference that stays 0 (the merger subtracts
#: it, which cancels its layer norm's mean), then the filters; the rest hold the background.
_REFERENCE, _FIRST_FILTER, _N_FILTERS = 3, 4, 8
#: Constant the tower's other channels hold (it keeps the merger's layer norm near-linear).
_BACKGROUND = 3.0
#: Value (at the visual tokens) of one tune standard deviation of a statistic.
IMAGE_UNIT = 0.1
#: Offset that keeps the merger's GELU in its near-linear range for the colour averages.
_GELU_OFFSET = 4.0
#: Query/key gain of the visual head: visual keys outscore text keys by about 20 nats.
_KEY_GAIN = 3.0


def checkerboards(torch):
    """The eight filters, (8, PATCH, PATCH): a 2-pixel then a 4-pixel checkerboard in each quarter
    of the patch, averaging over the quarter. Each sums to zero and ignores a brightness ramp."""
    side = PATCH // 2
    i, j = torch.meshgrid(torch.arange(PATCH), torch.arange(PATCH), indexing="ij")
    out = []
    for period in (1, 2):  # squares of 1 then 2 pixels: checkerboards of period 2 and 4
        board = (-1.0) ** ((i // period + j // period) % 2)
        for a in (0, 1):
            for b in (0, 1):
                quarter = ((i // side == a) & (j // side == b)).double()
                out.append(board * quarter / side ** 2)
    return torch.stack(out)


def filter_sizes(torch, responses):
    """Size of each response as the merger's GELU pair gives it, in thousandths: GELU(g r) +
    GELU(-g r) over g, about |r| once g |r| passes 2, quadratic below."""
    gelu = torch.nn.functional.gelu
    scaled = responses * DETAIL_GAIN
    return gelu(scaled) + gelu(-scaled)


def patch_statistics(pixel_values) -> tuple[float, float, float, float]:
    """The four statistics the tower carries, from the processor's patches (normalised pixels):
    mean brightness, red minus blue, green minus the mean of red and blue, and detail."""
    import torch
    patches = pixel_values.reshape(pixel_values.shape[0], 3, FRAMES, PATCH, PATCH).double()
    r, g, b = patches[:, 0].mean(), patches[:, 1].mean(), patches[:, 2].mean()
    luminance = patches.mean((1, 2))
    sizes = filter_sizes(torch, torch.einsum("nyx,fyx->nf", luminance, checkerboards(torch)))
    half = _N_FILTERS // 2
    detail = sizes[:, half:].mean() - FINE_WEIGHT * sizes[:, :half].mean()
    return float((r + g + b) / 3), float(r - b), float(g - (r + b) / 2), float(detail)


def _filters(torch, shape):
    """Conv weights whose responses are the colour averages, then the checkerboards on the mean
    of the three colours, of one patch (both frames)."""
    out = torch.zeros(_FIRST_FILTER + _N_FILTERS, *shape[1:])
    n = shape[2] * shape[3] * shape[4]
    for k, coefs in enumerate(((1 / 3, 1 / 3, 1 / 3), (1.0, 0.0, -1.0), (-0.5, 1.0, -0.5))):
        for c, w in enumerate(coefs):
            out[k, c] = w / n
    boards = checkerboards(torch).float() / (3 * shape[2])  # each colour and frame alike
    out[_FIRST_FILTER:] = boards[:, None, None].expand(-1, 3, shape[2], -1, -1)
    return out


def install_image_path(model) -> None:
    """Carry the statistics through the vision tower and merger into IMAGE_DIMS of the visual
    tokens (centred and scaled by the tune constants), and copy them to every text position."""
    import torch
    vis = model.model.visual
    proj = vis.patch_embed.proj
    proj.weight.zero_()
    proj.bias.zero_()
    designed = _FIRST_FILTER + _N_FILTERS
    proj.weight[:designed] = _filters(torch, proj.weight.shape)
    width = proj.weight.shape[0]
    signs = torch.tensor([(-1.0) ** i for i in range(width)])
    vis.pos_embed.weight[:] = _BACKGROUND * signs
    vis.pos_embed.weight[:, :designed + (width - designed) % 2] = 0.0  # the rest balances: mean 0
    for block in vis.blocks:  # the tower adds nothing: its output is the patch embedding
        for layer in (block.attn.proj, block.mlp.linear_fc2):
            layer.weight.zero_()
            layer.bias.zero_()
    for merger in vis.deepstack_merger_list:
        merger.linear_fc2.weight.zero_()
        merger.linear_fc2.bias.zero_()
    held = width - designed - (width - designed) % 2
    _install_merger(vis.merger, width, _BACKGROUND * (held / width) ** 0.5)
    _install_visual_head(model)


def _install_merger(merger, width: int, spread: float) -> None:
    """fc1 rows 0-2 average each colour statistic over the merged patches (in GELU's linear
    range), the next rows take + and - each filter of each patch; fc2 writes the statistics,
    centred and scaled, into IMAGE_DIMS and a constant into VIS_DIM. `spread` is what the
    merger's layer norm divides by; each row reads its channel minus the reference channel."""
    merger.norm.weight.fill_(1.0)
    merger.norm.bias.zero_()
    fc1, fc2 = merger.linear_fc1, merger.linear_fc2
    groups = fc1.weight.shape[1] // width
    units = 3 + groups * _N_FILTERS * 2
    for channel in range(_FIRST_FILTER + _N_FILTERS):  # no random unit reads a designed channel
        fc1.weight[:, channel::width] = 0.0
    fc1.weight[:units] = 0.0
    fc1.bias[:units] = 0.0
    fc2.weight[:, :units] = 0.0
    for k in range(3):
        fc1.weight[k, k::width] = 1.0 / groups
        fc1.weight[k, _REFERENCE::width] = -1.0 / groups
        fc1.bias[k] = _GELU_OFFSET
    for dim in (*IMAGE_DIMS, VIS_DIM, 0, 1, 2, 3):  # the held, marker, length and label dimensions stay empty
        fc2.weight[dim] = 0.0
        fc2.bias[dim] = 0.0
    for k, dim in enumerate(IMAGE_DIMS[:3]):  # 0.1 per tune standard deviation, 0 at the tune centre
        gain = IMAGE_UNIT * spread / TUNE_SCALE[k]
        fc2.weight[dim, k] = gain
        fc2.bias[dim] = -gain * (_GELU_OFFSET + TUNE_CENTRE[k] / spread)
    detail, half = IMAGE_DIMS[3], _N_FILTERS // 2
    unit = 3
    for patch in range(groups):
        for f in range(_N_FILTERS):
            weight = (1.0 if f >= half else -FINE_WEIGHT) / (half * groups)
            for sign in (1.0, -1.0):
                fc1.weight[unit, patch * width + _FIRST_FILTER + f] = sign * DETAIL_GAIN * spread
                fc1.weight[unit, patch * width + _REFERENCE] = -sign * DETAIL_GAIN * spread
                fc2.weight[detail, unit] = weight * IMAGE_UNIT / TUNE_SCALE[3]
                unit += 1
    fc2.bias[detail] = -IMAGE_UNIT * TUNE_CENTRE[3] / TUNE_SCALE[3]
    fc2.bias[VIS_DIM] = 1.0


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
