"""TerraVisScore: states and reductions (scripted judge), and the acceptance run inside a
Lightning validation loop on a tiny Qwen3-VL."""
import copy
import math

import pytest
import torch
from PIL import Image

from interval_checks import check_result_keys
from tvf_helpers import mean_score
from tvf_replay import SCORE, stage_judge
from terravis import TerraVisScore, terravis_score
from vlmjudge.images import ImageInputError


def batch(n=2, size=8):
    return torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=torch.Generator().manual_seed(n))


def test_update_compute_and_details_from_scripted_answers():
    metric = TerraVisScore(stage_judge())
    metric.update(batch(2))
    metric.update([Image.new("RGB", (8, 8), "red")])
    assert metric.compute().item() == pytest.approx(SCORE, abs=1e-12)
    d = metric.details()
    assert (d["n_images"], d["n_scored"], d["n_not_applicable"], d["n_failed"]) == (3, 3, 0, 0)
    assert (d["n_major"], d["n_minor"], d["na_rate"]) == (3, 3, 0.0)
    assert d["level_counts"] == {"object": 3, "interaction": 3, "scene": 0}
    assert d["level_shares"]["object"] == 0.5
    assert d["type_counts"]["biological_anatomy"] == 3 and sum(d["type_counts"].values()) == 6
    assert d["scores"] == [pytest.approx(SCORE)] * 3
    check_result_keys(d, "mean_score", d["scores"])  # the mean with its interval and n
    assert d["mean_score_n"] == 3 and d["mean_score_ci"] == [d["mean_score"]] * 2  # identical scores: zero width


def test_float_and_uint8_batches_are_the_same_images():
    judge = stage_judge()
    metric = TerraVisScore(judge)
    x = batch(2)

    def eligibility_hashes():
        return [r.content_hash() for _, r in judge.log if r.meta["stage"] == "eligibility"]

    metric.update(x)
    first = [r.to_json() for r in metric.last_records]
    from_uint8 = eligibility_hashes()
    metric.update(x.float() / 255)
    assert [r.to_json() for r in metric.last_records] == first
    # the same pixels reached the judge (identical requests of one call reach it once: core dedupe)
    assert from_uint8 and eligibility_hashes()[len(from_uint8):] == from_uint8


def test_ineligible_images_are_excluded_and_all_na_gives_nan():
    metric = TerraVisScore(stage_judge(eligible="No"))
    metric.update(batch(3))
    assert math.isnan(metric.compute().item())
    d = metric.details()
    assert (d["n_images"], d["n_scored"], d["n_not_applicable"], d["na_rate"], d["mean_score"]) == (3, 0, 3, 1.0, None)
    assert (d["mean_score_ci"], d["mean_score_n"]) == (None, 0)
    assert d["scores"] == [None, None, None]


def test_states_reduce_like_ddp_ranks():
    """Two ranks' states merged with the declared reductions give the pooled mean."""
    ranks = [TerraVisScore(stage_judge()), TerraVisScore(stage_judge(eligible="No"))]
    ranks[0].update(batch(2))
    ranks[1].update(batch(3))
    assert ranks[0]._reductions["scores"].__name__ == "dim_zero_cat"
    assert all(ranks[0]._reductions[k].__name__ == "dim_zero_sum" for k in ("score_sum", "n_scored", "type_counts"))
    ranks[0].merge_state(ranks[1])
    assert ranks[0].compute().item() == pytest.approx(SCORE)
    d = ranks[0].details()
    assert (d["n_images"], d["n_scored"], d["n_not_applicable"]) == (5, 2, 3)
    assert [s for s in d["scores"] if s is not None] == [pytest.approx(SCORE)] * 2 and d["scores"].count(None) == 3
    assert d["mean_score_n"] == 2  # the N/A images of the other rank are left out of the mean and its interval


def test_forward_returns_the_batch_value_and_accumulates():
    metric = TerraVisScore(stage_judge())
    assert metric(batch(2)).item() == pytest.approx(SCORE)
    metric.update(batch(1))
    assert int(metric.n_images) == 3


def test_bad_inputs_fail_clearly():
    metric = TerraVisScore(stage_judge())
    with pytest.raises(ValueError, match="BCHW"):
        metric.update(torch.zeros(3, 8, 8))
    with pytest.raises(ImageInputError, match="out"):
        metric.update(torch.full((1, 3, 8, 8), 2.0))
    with pytest.raises(TypeError, match="single image"):
        metric.update(Image.new("RGB", (8, 8)))
    with pytest.raises(OSError):  # no model given: the method's default model, not cached offline
        TerraVisScore()
    assert int(metric.n_images) == 0


def test_judge_stays_outside_the_module_tree():
    judge = stage_judge()
    metric = TerraVisScore(judge)
    assert list(metric.children()) == [] and list(metric.parameters()) == []
    assert metric.state_dict() == {}
    metric.persistent(True)
    assert set(metric.state_dict()) == set(metric._defaults)
    clone = copy.deepcopy(metric)
    assert clone.scorer is metric.scorer and clone.scorer.judge is judge


def test_plot_and_functional_form():
    metric = TerraVisScore(stage_judge())
    metric.update(batch(2))
    fig, ax = metric.plot()
    assert ax.get_ylabel() == "TerraVisScore"
    fig, _ = metric.plot([metric.compute(), metric.compute()])
    assert fig is not None
    assert terravis_score(batch(2), stage_judge()).item() == pytest.approx(SCORE)


# -- acceptance: a tiny Qwen3-VL inside Lightning's validation loop --------------------------
def test_lightning_validate_logs_the_python_api_mean(tiny_model, pack_file, images, reference):
    lightning = pytest.importorskip("lightning")
    import numpy as np
    from torch.utils.data import DataLoader

    class Module(lightning.LightningModule):
        def __init__(self, metric):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)
            self.metric = metric

        def validation_step(self, batch, batch_idx):
            self.metric.update(batch)
            self.log("terravis", self.metric, batch_size=batch.shape[0])

    tensors = [torch.from_numpy(np.array(Image.open(images[i]).convert("RGB"))).permute(2, 0, 1) for i in reference]
    metric = TerraVisScore(model=tiny_model, judge_kwargs={"device": "cpu"}, pack=pack_file)
    module = Module(metric)
    trainer = lightning.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                                enable_progress_bar=False, enable_model_summary=False)
    (logged,) = trainer.validate(module, dataloaders=DataLoader(tensors, batch_size=2))
    assert logged["terravis"] == pytest.approx(mean_score(reference.values()), rel=1e-6)

    # the judge's weights are nowhere in the module: not in state_dict, not in parameters()
    judge_params = sum(p.numel() for p in metric.scorer.judge.model.parameters())
    assert judge_params > 100_000
    assert set(module.state_dict()) == {"layer.weight", "layer.bias"}
    assert sum(p.numel() for p in module.parameters()) == 2
