"""`bench.compute` counts the FLOPs a pass's kernels run, by their shapes, split into the
vision tower, text attention and the rest of the text model."""
import pytest
import torch
import torch.nn.functional as F

from bench.compute import Work, count_flops
from bench.terravis_paths import compute_lines


class _Tower(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 4, bias=False)

    def forward(self, x):
        q = self.proj(x).view(1, 1, -1, 4)
        return F.scaled_dot_product_attention(q, q, q)


class _Toy(torch.nn.Module):
    """A 'visual' tower (its linear and attention count as vision) beside text work."""

    def __init__(self):
        super().__init__()
        self.visual = _Tower()
        self.head = torch.nn.Linear(8, 6, bias=False)

    def forward(self, x, q, k, v, **attention):
        self.visual(x)
        return self.head(x), F.scaled_dot_product_attention(q, k, v, **attention)


def test_counts_each_kernel_by_its_shapes_and_splits_vision_from_text():
    toy = _Toy()
    x = torch.randn(3, 8)
    q, k, v = torch.randn(2, 4, 5, 16), torch.randn(2, 2, 7, 16), torch.randn(2, 2, 7, 16)
    mask = torch.ones(2, 1, 5, 7, dtype=torch.bool)
    _, work = count_flops(lambda: toy(x, q, k, v, attn_mask=mask, enable_gqa=True))
    tower_linear, tower_attention = 2 * 3 * 8 * 4, 4 * 1 * 1 * 3 * 3 * 4
    assert work.vision == tower_linear + tower_attention
    # grouped-query heads broadcast: every query head attends to every key; the mask counts too
    assert work.text_attention == 4 * 2 * 4 * 5 * 7 * 16
    assert work.text_other == 2 * 3 * 8 * 6
    assert work.total == work.vision + work.text_attention + work.text_other


def test_a_model_without_a_vision_tower_counts_no_vision():
    lin = torch.nn.Linear(4, 4, bias=False)
    out, work = count_flops(lambda: lin(torch.randn(2, 4)))
    assert out.shape == (2, 4) and work == Work(0.0, 0.0, 2.0 * 2 * 4 * 4)


def test_compute_lines_give_the_ratio_and_the_rate_only_when_every_image_was_counted():
    work = {"reference": Work(100e9, 300e9, 100e9), "optimized": Work(5e9, 30e9, 15e9)}
    text = compute_lines(work, 4, 4, speedup=5.0)
    assert text.splitlines()[-1] == ("compute ratio (reference / optimized FLOPs): 10.00; speedup / compute ratio: "
                                     "0.50 (the optimized path's FLOP rate against the reference's)")
    assert "reference: 500.0 GFLOP (vision tower 100.0" in text
    assert compute_lines(work, 2, 4, speedup=5.0).splitlines()[-1] == \
        "compute ratio (reference / optimized FLOPs): 10.00"
    with pytest.raises(KeyError):
        compute_lines({"optimized": work["optimized"]}, 4, 4, 5.0)


def test_flops_images_default_to_all_and_refuse_a_negative_count():
    from bench.terravis_paths import parse_args
    assert parse_args([]).flops_images is None and parse_args(["--flops-images", "0"]).flops_images == 0
    with pytest.raises(SystemExit):
        parse_args(["--flops-images", "-1"])
