"""Shared-prefix attention (`hf.prefix.shared_attention`, issue 22): suffix and decode rows read their
unit's prefix once, split at the prefix's end and merged by log-sum-exp. The split equals
softmax attention over the concatenated columns; a model judged through it answers as the
plain layout does; a layer that bypasses it is refused, and models it cannot serve say why."""
import pytest
import torch
import torch.nn.functional as F

from vlmjudge import Decoding, Request
from vlmjudge.backends.hf.prefix import shared_attention

OPTIONS = ["Yes", "No"]
TOL = 1e-5


class Layer(torch.nn.Module):
    """What the attention function reads of a layer: its index and causality."""

    def __init__(self, layer_idx=0):
        super().__init__()
        self.layer_idx, self.is_causal = layer_idx, True


def split_case(length, seed=0, heads=4, kv_heads=2, dim=16, base_lengths=(9, 5, 12)):
    """Three bases (of different lengths by default) under six rows sorted by base; each row's
    own columns (its part after the base, then `length` new ones) left-padded, causal over the
    new ones."""
    g = torch.Generator().manual_seed(seed)
    row_base, pads = [0, 0, 1, 1, 1, 2], [0, 2, 1, 0, 3, 2]
    own = 4 + length
    keys = [torch.randn(1, kv_heads, n, dim, generator=g) for n in base_lengths]
    values = [torch.randn(1, kv_heads, n, dim, generator=g) for n in base_lengths]
    rows = len(row_base)
    query = torch.randn(rows, length, heads, dim, generator=g).transpose(1, 2)  # as a layer hands it over
    key = torch.randn(rows, kv_heads, own, dim, generator=g)
    value = torch.randn(rows, kv_heads, own, dim, generator=g)
    mask = torch.ones(rows, 1, length, own, dtype=torch.bool)
    for r, pad in enumerate(pads):
        mask[r, :, :, :pad] = False
    mask[:, :, :, own - length:] &= torch.ones(length, length, dtype=torch.bool).tril()
    shared = shared_attention.SharedPrefix([keys], [values], torch.tensor(row_base))
    return shared, query, key, value, mask, pads


def plain(shared, query, key, value, mask):
    """Each row's attention over its base and own columns, concatenated (what the split equals)."""
    out = []
    for r, b in enumerate(shared.row_base.tolist()):
        k = torch.cat([shared.keys[0][b][0], key[r]], dim=1).repeat_interleave(2, dim=0)
        v = torch.cat([shared.values[0][b][0], value[r]], dim=1).repeat_interleave(2, dim=0)
        seen = torch.cat([torch.ones(mask.shape[2], k.shape[1] - key.shape[2], dtype=torch.bool), mask[r, 0]], dim=1)
        out.append(F.scaled_dot_product_attention(query[r], k, v, attn_mask=seen, scale=0.3))
    return torch.stack(out)


def run_split(shared, query, key, value, mask):
    cache = shared_attention.SuffixCache(None, shared)
    with shared_attention.attending([], cache):
        out, weights = shared_attention.attention(Layer(), query, key, value, mask, scaling=0.3)
    assert weights is None
    return out.transpose(1, 2)


@pytest.mark.parametrize("length", [1, 5])
def test_the_split_equals_attention_over_the_concatenated_columns(length):
    shared, query, key, value, mask, pads = split_case(length)
    got, want = run_split(shared, query, key, value, mask), plain(shared, query, key, value, mask)
    assert torch.isfinite(got).all()
    assert (got - want).abs().max() < TOL
    assert shared.runs == [(0, 0, 2), (1, 2, 5), (2, 5, 6)]


@pytest.mark.parametrize("length", [1, 5])
def test_bases_of_one_width_decode_as_one_batch_and_equal_the_concatenated_columns(length, monkeypatch):
    """In a decode step, equal-width bases (each image's prefix under its evidence rows) go to
    the kernel as one batch, shorter runs padded; longer suffixes keep one call per base. The
    answer is the same either way, also after rows leave a decode and a base keeps none of its
    rows."""
    batched = []
    at_once = shared_attention._bases_at_once
    monkeypatch.setattr(shared_attention, "_bases_at_once", lambda *a: batched.append(1) or at_once(*a))
    shared, query, key, value, mask, _ = split_case(length, base_lengths=(7, 7, 7))
    got, want = run_split(shared, query, key, value, mask), plain(shared, query, key, value, mask)
    assert len(batched) == (length == 1) and (got - want).abs().max() < TOL
    keep = torch.tensor([0, 1, 5])  # base 1's rows have left
    left = shared.select(keep)
    assert [b for b, _, _ in left.runs] == [0, 2]
    got = run_split(left, query[keep], key[keep], value[keep], mask[keep])
    assert len(batched) == 2 * (length == 1)
    assert (got - plain(left, query[keep], key[keep], value[keep], mask[keep])).abs().max() < TOL


def test_a_forwards_boolean_mask_is_converted_once_for_all_its_layers():
    """Every layer of a forward hands over the same boolean mask: the split converts it to the
    kernel's additive form once, and converts a new forward's mask (a new object) anew. Two
    layers over one mask equal the concatenated columns, as one layer does."""
    shared, query, key, value, mask, _ = split_case(3)
    first = shared_attention.additive(shared, mask, torch.float32)
    assert first is shared_attention.additive(shared, mask, torch.float32)
    assert torch.equal(first, torch.zeros(mask.shape).masked_fill_(~mask, float("-inf")))
    again = mask.clone()
    assert shared_attention.additive(shared, again, torch.float32) is not first
    assert shared_attention.additive(shared, None, torch.float32) is None
    floats = torch.zeros(mask.shape, dtype=torch.float64)
    assert shared_attention.additive(shared, floats, torch.float32).dtype == torch.float32
    shared = shared_attention.SharedPrefix(shared.keys * 2, shared.values * 2, shared.row_base)
    cache = shared_attention.SuffixCache(None, shared)
    with torch.inference_mode():  # as the backend runs
        for _ in range(2):  # each forward starts without the last one's mask, and keeps none after it
            with shared_attention.attending([], cache):
                assert shared.masks is None
                outs = [shared_attention.attention(Layer(i), query, key, value, mask, scaling=0.3)[0]
                        for i in range(2)]
                assert shared.masks[0] is mask
            assert shared.masks is None
    want = plain(shared, query, key, value, mask).transpose(1, 2)
    assert all((out - want).abs().max() < TOL for out in outs)


def test_a_missing_mask_reads_as_causal_and_decode_steps_see_every_column():
    shared, query, key, value, _, _ = split_case(5)
    key, value = key[..., -5:, :], value[..., -5:, :]  # an empty cache before the suffix: square
    causal = torch.ones(6, 1, 5, 5, dtype=torch.bool).tril()
    assert (run_split(shared, query, key, value, None) - plain(shared, query, key, value, causal)).abs().max() < TOL
    shared, query, key, value, _, _ = split_case(1)
    every = torch.ones(6, 1, 1, key.shape[2], dtype=torch.bool)
    assert (run_split(shared, query, key, value, None) - plain(shared, query, key, value, every)).abs().max() < TOL


def test_the_split_refuses_what_it_cannot_honour():
    shared, query, key, value, mask, _ = split_case(1)
    cache = shared_attention.SuffixCache(None, shared)
    with pytest.raises(RuntimeError, match="sliding_window"):
        with shared_attention.attending([], cache):
            shared_attention.attention(Layer(), query, key, value, mask, sliding_window=4)
    with pytest.raises(RuntimeError, match="not one of the shared prefix's layers"):
        with shared_attention.attending([], cache):
            shared_attention.attention(Layer(layer_idx=3), query, key, value, mask)
    with pytest.raises(RuntimeError, match="0 of 1 attention layers read the shared prefix"):
        with shared_attention.attending([], cache):
            pass
    with pytest.raises(ValueError, match="sorted by base"):
        shared_attention.SharedPrefix(shared.keys, shared.values, torch.tensor([0, 1, 0]))


def test_outside_a_shared_forward_it_is_sdpa():
    query, key, value = torch.randn(2, 4, 3, 16), torch.randn(2, 4, 3, 16), torch.randn(2, 4, 3, 16)
    out, _ = shared_attention.attention(Layer(), query, key, value, None, scaling=0.25)
    want = F.scaled_dot_product_attention(query, key, value, is_causal=True, scale=0.25).transpose(1, 2)
    assert torch.equal(out, want)


def checks(image, n, **kw):
    return [Request(images=[image], text=f"Check {k}: is there a cat in the image?", prefix="Answer:", **kw)
            for k in range(n)]


def test_a_judge_reads_shared_prefixes_and_answers_as_the_copied_layout(loaded, fresh, monkeypatch, noise):
    """Qwen3-VL and LLaVA on CPU: the split runs (counted), and probabilities and greedy texts
    equal those of the same judge with each request's prefix copied into its cache row."""
    calls = []
    split = shared_attention._split
    monkeypatch.setattr(shared_attention, "_split", lambda *a, **k: calls.append(1) or split(*a, **k))
    for family in ("qwen3_vl", "llava"):
        sharing, copying = fresh(loaded[family]), fresh(loaded[family])
        assert sharing._runner.shared_blocker is None and sharing._runner.shares(sharing.model.device)
        copying._runner.shared_blocker = "copied for this comparison"
        images = noise(2)
        requests = [r for im in images for r in checks(im, 3)]
        evidence = [r for im in images for r in checks(im, 2, decoding=Decoding(max_new_tokens=8))]
        before = len(calls)
        p_shared, t_shared = sharing.choice_probs(requests, OPTIONS), [a.text for a in sharing.generate(evidence)]
        assert len(calls) > before
        ran = len(calls)
        p_copied, t_copied = copying.choice_probs(requests, OPTIONS), [a.text for a in copying.generate(evidence)]
        assert len(calls) == ran  # the copied layout never calls the split
        assert max(abs(a[o] - b[o]) for a, b in zip(p_shared, p_copied) for o in OPTIONS) < TOL
        assert t_shared == t_copied
        assert len({round(p["Yes"], 6) for p in p_copied}) > 2


def test_a_layer_left_on_plain_sdpa_is_refused(loaded, fresh, noise):
    judge = fresh(loaded["qwen3_vl"])
    judge._runner._attention_configs = []  # no layer switched: each would see its own columns only
    with pytest.raises(RuntimeError, match="attention layers read the shared prefix"):
        judge.choice_probs(checks(noise(1)[0], 2), OPTIONS)


def test_models_it_cannot_serve_say_why(loaded):
    judge = loaded["qwen3_vl"]
    assert judge._runner.shares("cpu") and not judge._runner.shares("cuda")
    assert judge.manifest()["prefix_attention"].startswith("shared")
    assert judge._runner.attention_layout("cuda") == "copied per request (not on CPU)"
    configs = shared_attention.attention_configs(judge.model)
    saved = [c._attn_implementation for c in configs]
    try:
        for c in configs:
            c._attn_implementation = "eager"
        assert "eager" in shared_attention.blocker(judge.model)
    finally:
        for c, name in zip(configs, saved):
            c._attn_implementation = name
    assert shared_attention.blocker(judge.model) is None


def test_unit_prefixes_from_stored_rows_equal_those_from_a_padded_cache():
    """`of_rows` reads the store's rows in place (bases: their oldest ancestor); it holds the
    same bases and own columns as `of` over the left-padded copy of every whole row."""
    from types import SimpleNamespace

    from transformers import LlamaConfig

    from vlmjudge.backends.hf.prefix.kv_run import _base
    from vlmjudge.backends.hf.prefix.kv_store import RowKV
    g = torch.Generator().manual_seed(1)

    def kv(n):
        return torch.randn(1, 2, n, 16, generator=g), torch.randn(1, 2, n, 16, generator=g)

    root = RowKV([kv(6)], 6, 6)
    check = RowKV([kv(3)], 9, 9, parent=root)
    rows = [RowKV([kv(2)], 11, 11, parent=check), RowKV([kv(4)], 10, 10, parent=root), RowKV([kv(5)], 5, 5),
            RowKV([kv(1)], 7, 7, parent=root)]
    bases = [_base(r, u) for u, r in enumerate(rows)]
    assert [b[1] for b in bases] == [6, 6, 5, 6] and bases[0][0] == bases[1][0] == bases[3][0]
    width = 11
    padded = [torch.zeros(len(rows), 2, width, 16), torch.zeros(len(rows), 2, width, 16)]
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for u, r in enumerate(rows):
        for which in (0, 1):
            padded[which][u, :, width - r.length:] = torch.cat([s[which] for s in r.segments(0)], dim=-2)[0]
        mask[u, width - r.length:] = 1
    cache = SimpleNamespace(layers=[SimpleNamespace(keys=padded[0], values=padded[1])])
    copied = shared_attention.UnitPrefixes.of(cache, mask, bases)
    in_place = shared_attention.UnitPrefixes.of_rows(rows, bases, "cpu")
    assert torch.equal(copied.unit_base, in_place.unit_base) and torch.equal(copied.own, in_place.own)
    for a, b in zip(copied.keys[0] + copied.values[0], in_place.keys[0] + in_place.values[0]):
        assert torch.equal(a, b)
    block_rows, row_unit = torch.arange(4), torch.tensor([0, 1, 2, 3])
    (rows_a, cache_a, mask_a), (rows_b, cache_b, mask_b) = (
        p.block(block_rows, row_unit, LlamaConfig(num_hidden_layers=1)) for p in (copied, in_place))
    assert torch.equal(rows_a, rows_b) and torch.equal(mask_a, mask_b)
    seen = mask_a.bool()[:, None, :, None]  # columns of a shorter own part are masked: compare the rest
    assert torch.equal(cache_a.layers[0].keys * seen, cache_b.layers[0].keys * seen)
    assert torch.equal(cache_a.layers[0].values * seen, cache_b.layers[0].values * seen)


def test_units_served_in_place_do_not_count_against_the_batch_size(loaded, fresh, noise):
    """With batch size 1, three images' first questions run as three batches; their checks, whose
    image prefixes the KV store now holds and whose rows read them in place, run as one. The
    copied layout still counts them (each row would copy its prefix), and both answer alike.
    Within a run (`digests_held`, as every method holds one), where the planner knows the
    images' digests; outside one it counts every unit, and hashes nothing to plan."""
    from vlmjudge.images import digests_held
    images = noise(3)
    first = [r for im in images for r in checks(im, 1)]
    later = [Request(images=[im], text=f"Check {k}: is there a cat in the image? Look again.", prefix="Answer:")
             for im in images for k in range(3)]
    answers = {}
    for layout in ("shared", "copied"):
        judge = fresh(loaded["qwen3_vl"])
        judge.rows = 1
        if layout == "copied":
            judge._runner.shared_blocker = "copied for this comparison"
        with digests_held():
            judge.choice_probs(first, OPTIONS)
            assert judge.stats.forward_batches == 3
            answers[layout] = judge.choice_probs(later, OPTIONS)
        assert judge.stats.forward_batches == (4 if layout == "shared" else 6)
        assert judge.stats.prefix_cache_hits >= 3
    assert max(abs(a[o] - b[o]) for a, b in zip(answers["shared"], answers["copied"]) for o in OPTIONS) < TOL
    judge = fresh(loaded["qwen3_vl"])
    judge.rows = 1
    judge.choice_probs(first, OPTIONS)
    judge.choice_probs(later, OPTIONS)  # no run holds the digests: every unit counted
    assert judge.stats.forward_batches == 6 and judge.stats.prefix_cache_hits >= 3
