"""torchmetrics GridIoU / GridF1: same numbers as viescore2.evaluation, mergeable states, plot()."""
import matplotlib
import pytest
import torch

import viescore2
from viescore2.evaluation import localization_metrics
from viescore2.grid import Grid
from viescore2.parsing import parse_output

matplotlib.use("Agg")

TEXTS = ["r1: 1,2\nr3: 3", "no idea", "none", "r4: 4,5", "r8: 8,9"]
TRUTH = [Grid({(1, 1), (1, 2), (2, 1), (2, 2)}), Grid({(5, 5)}), Grid(), Grid(), Grid({(8, 8), (8, 9)})]


def test_exported_from_the_package():
    from viescore2.metric import GridF1, GridIoU
    assert viescore2.GridIoU is GridIoU and viescore2.GridF1 is GridF1


def test_values_match_the_functional_evaluation():
    expected = localization_metrics([parse_output(t).union for t in TEXTS], TRUTH)
    f1, iou = viescore2.GridF1(), viescore2.GridIoU()
    f1.update(TEXTS[:2], TRUTH[:2])
    f1.update([parse_output(t).union for t in TEXTS[2:]], [g.to_text() for g in TRUTH[2:]])
    iou.update(TEXTS, TRUTH)
    assert f1.compute().item() == pytest.approx(expected["micro_f1"])
    assert iou.compute().item() == pytest.approx(expected["grid_iou"])  # (2/5 + 0 + 1) / 3
    assert iou.compute().item() == pytest.approx((0.4 + 0 + 1) / 3)
    assert int(f1.parse_failures) == 1 and int(iou.false_alarms) == 1 and int(iou.clean_images) == 2


def test_tensor_inputs():
    pred = torch.zeros(2, 4, 4, dtype=torch.bool)
    truth = torch.zeros(2, 4, 4, dtype=torch.bool)
    pred[0, 0, :2] = True
    truth[0, 0, 1:3] = True
    m = viescore2.GridIoU(n=4)
    m.update(pred, truth)
    assert m.compute().item() == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        m.update(torch.zeros(1, 5, 5, dtype=torch.bool), torch.zeros(1, 5, 5, dtype=torch.bool))


def test_states_reduce_like_ddp():
    for cls in (viescore2.GridF1, viescore2.GridIoU):
        whole, left, right = cls(), cls(), cls()
        whole.update(TEXTS, TRUTH)
        left.update(TEXTS[:2], TRUTH[:2])
        right.update(TEXTS[2:], TRUTH[2:])
        left.merge_state(right)  # applies each state's declared reduction (sum / cat)
        assert left.compute().item() == pytest.approx(whole.compute().item())
    iou = viescore2.GridIoU()
    assert iou._reductions["ious"].__name__ == "dim_zero_cat"
    assert iou._reductions["false_alarms"].__name__ == "dim_zero_sum"


def test_undefined_is_nan_and_plot():
    m = viescore2.GridIoU()
    m.update(["none"], [Grid()])
    assert torch.isnan(m.compute())
    f1 = viescore2.GridF1()
    f1.update(TEXTS, TRUTH)
    fig, ax = f1.plot()
    assert fig is not None and ax is not None
    fig, ax = viescore2.GridIoU().plot(torch.tensor([0.2, 0.4, 0.5]))
    assert fig is not None
