"""`VIEScore2Score` in a Lightning validation loop logs the mean of the pipeline's overall scores."""
import copy

import numpy as np
import pytest
import torch

L = pytest.importorskip("lightning")

from viescore2 import VIEScore2  # noqa: E402
from viescore2.asking import make_items  # noqa: E402
from viescore2.metric import VIEScore2Score, viescore2_score  # noqa: E402
from vlmjudge.backends.replay import ReplayJudge  # noqa: E402
from vlmjudge.images import to_pil_list  # noqa: E402

from interval_checks import check_result_keys  # noqa: E402

# (pq, sc) per image; the fourth answer cannot be read. Overall sqrt(pq * sc): 6, 2, 9, -, 4, 5.
ANSWERS = ["pq: 4/10\nsc: 9/10", "pq: 1/10\nsc: 4/10", "pq: 9/10\nsc: 9/10", "no scores here",
           "pq: 8/10\nsc: 2/10", "pq: 5/10\nsc: 5/10"]
PROMPTS = [f"prompt {i}" for i in range(len(ANSWERS))]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    images = torch.from_numpy(rng.integers(0, 256, (len(ANSWERS), 3, 24, 32), dtype=np.uint8))
    # replay by content hash, so the answers follow the image pixels through tensor -> PIL conversion
    scorer = VIEScore2(ReplayJudge({}), fields="pq_sc")
    requests = scorer.requests(make_items(to_pil_list(images), PROMPTS))
    judge = ReplayJudge({r.content_hash(): text for r, text in zip(requests, ANSWERS)})
    return images, judge


class Validated(L.LightningModule):
    def __init__(self, metric):
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)
        self.metric = metric

    def validation_step(self, batch, batch_idx):
        images, prompts = batch
        self.metric.update(images, list(prompts))
        self.log("val_viescore2", self.metric, on_epoch=True, batch_size=len(prompts))


def test_validation_loop_logs_the_pipeline_mean(data):
    images, judge = data
    pipeline = VIEScore2(judge, fields="pq_sc").score(to_pil_list(images), PROMPTS)
    expected = np.mean([r.overall for r in pipeline if r.overall is not None])
    assert expected == pytest.approx((6 + 2 + 9 + 4 + 5) / 5)

    metric = VIEScore2Score(judge, fields="pq_sc")
    loader = torch.utils.data.DataLoader(list(zip(images, PROMPTS)), batch_size=3)
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    (logged,) = trainer.validate(Validated(metric), dataloaders=loader, verbose=False)
    assert logged["val_viescore2"] == pytest.approx(expected)


def test_metric_states_details_and_judge_outside_state(data):
    images, judge = data
    metric = VIEScore2Score(judge, fields="pq_sc")
    metric.update(images[:3], PROMPTS[:3])
    metric.update(images[3:], PROMPTS[3:])
    assert float(metric.compute()) == pytest.approx(26 / 5)
    d = metric.details()
    assert d["n_images"] == 6 and d["n_scored"] == 5 and d["n_failed"] == 1 and d["parse_failures"] == 2
    assert d["mean_pq"] == pytest.approx(27 / 5) and d["mean_sc"] == pytest.approx(29 / 5)
    assert d["scores"][3] is None and d["scores"][0] == pytest.approx(6.0)
    check_result_keys(d, "mean_score", d["scores"])  # n=5: the image without a score is left out
    check_result_keys(d, "mean_pq", [4, 1, 9, 8, 5])  # the PQ and SC read (ANSWERS), each its own interval
    check_result_keys(d, "mean_sc", [9, 4, 9, 2, 5])
    assert list(metric.children()) == [] and "judge" not in " ".join(metric.state_dict())
    assert copy.deepcopy(metric).scorer is metric.scorer  # copies share the judge
    metric.reset()
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert torch.isnan(metric.compute())
    assert float(viescore2_score(images[:2], PROMPTS[:2], judge, fields="pq_sc")) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="needs scores"):
        VIEScore2Score(judge, fields="grid")
    with pytest.raises(ValueError, match="B, C, H, W"):
        metric.update(images[0], PROMPTS[:1])
