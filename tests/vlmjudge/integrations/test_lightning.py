"""JudgeCallback in a real `trainer.fit`: scores for two methods in the CSV log every epoch, image
grids to loggers that take them, nothing of the judge in the checkpoint."""
import csv

import numpy as np
import pytest
import torch

pytest.importorskip("lightning")

import lightning.pytorch as L  # noqa: E402
from integ_helpers import regeneration, terravis  # noqa: E402
from lightning.pytorch.loggers import CSVLogger, Logger  # noqa: E402
from PIL import Image  # noqa: E402

from vlmjudge import get_method  # noqa: E402
from vlmjudge.integrations.lightning import JudgeCallback  # noqa: E402
from vlmjudge.testing.training_standins import TinyGenerator, loaders  # noqa: E402

PROMPTS = ["a red car", "a cat on a sofa"]


class WandbLike(Logger):
    """Takes images through `log_image`, as WandbLogger does."""

    def __init__(self):
        super().__init__()
        self.images = []

    name = property(lambda self: "wandb_like")
    version = property(lambda self: 0)

    def log_metrics(self, metrics, step=None):
        pass

    def log_hyperparams(self, params, *args, **kwargs):
        pass

    def log_image(self, key, images, step=None, **kwargs):
        self.images.append((key, images, step, kwargs))


class Board:
    def __init__(self):
        self.images = []

    def add_image(self, tag, array, step, dataformats="CHW"):
        self.images.append((tag, array.shape, step, dataformats))


class BoardLike(WandbLike):
    """Takes images through `experiment.add_image`, as TensorBoardLogger does."""

    log_image = None

    def __init__(self):
        super().__init__()
        self.board = Board()

    name = property(lambda self: "board_like")
    experiment = property(lambda self: self.board)


def fit(tmp_path, callback, loggers, epochs=2):
    train, val = loaders()
    module = TinyGenerator()
    trainer = L.Trainer(max_epochs=epochs, limit_train_batches=2, limit_val_batches=1, accelerator="cpu",
                        logger=loggers, callbacks=[callback, L.callbacks.ModelCheckpoint(tmp_path / "ckpt",
                                                                                       save_last=True)],
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(module, train, val)
    return trainer, module


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_fit_logs_two_methods_every_epoch_and_checkpoints_no_judge(tmp_path, judge_kwargs, encoders):
    torch.manual_seed(0)
    references = [Image.new("RGB", (16, 16), (200, 30, 30)), Image.new("RGB", (16, 16), (90, 90, 200))]
    callback = JudgeCallback([terravis(), regeneration(encoders)], PROMPTS, TinyGenerator.generate, judge=judge_kwargs,
                             inputs={"reference": references})
    csv_logger, wandb_like, board_like = CSVLogger(tmp_path / "logs"), WandbLike(), BoardLike()
    trainer, module = fit(tmp_path, callback, [csv_logger, wandb_like, board_like])

    rows = [r for r in read_csv(tmp_path / "logs" / "lightning_logs" / "version_0" / "metrics.csv")
            if r.get("judge/regeneration")]
    assert [int(r["epoch"]) for r in rows] == [0, 1]  # not in the sanity check: once per epoch
    assert len(callback.history) == 2
    for row, seen in zip(rows, callback.history):
        for key in ("terravis", "terravis_na", "regeneration", "regeneration_na"):
            assert float(row[f"judge/{key}"]) == pytest.approx(seen[key], rel=1e-6)
    assert 0 < callback.history[-1]["terravis"] <= 1 and callback.history[-1]["terravis_na"] == 0
    assert callback.history[0]["regeneration"] != callback.history[1]["regeneration"]  # the model trained

    # the logged value is the mean of Regeneration's own scores / 100 for the last samples
    last = callback.last
    api = get_method("regeneration").build(None, **regeneration(encoders).config)
    direct = api.score_batch({"reference": references, "generated": last.images})
    assert callback.history[-1]["regeneration"] == pytest.approx(sum(r.score for r in direct) / 200, abs=1e-9)
    assert last.prompts == PROMPTS

    # grids for both methods at both epochs, to each logger that takes images
    assert sorted(k for k, *_ in wandb_like.images) == sorted(["judge/terravis_samples", "judge/regeneration_samples"] * 2)
    assert all(isinstance(imgs[0], Image.Image) for _, imgs, _, _ in wandb_like.images)
    assert [(t, d) for t, _, _, d in board_like.board.images][:2] == [("judge/terravis_samples", "HWC"),
                                                                    ("judge/regeneration_samples", "HWC")]

    ckpt = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=False)
    assert set(ckpt["state_dict"]) == set(module.state_dict())
    (state,) = [v for k, v in ckpt["callbacks"].items() if k.startswith("JudgeCallback")]
    assert state == {"history": callback.history}
    assert not _tensors_in(state)


def _tensors_in(obj):
    if isinstance(obj, torch.Tensor):
        return True
    if isinstance(obj, dict):
        return any(_tensors_in(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_tensors_in(v) for v in obj)
    return False


def test_every_n_epochs_and_shard_mode_on_one_process(tmp_path, toys):
    callback = JudgeCallback(["integ_bright"], PROMPTS, TinyGenerator.generate, every_n_epochs=2, distributed="shard")
    fit(tmp_path, callback, [CSVLogger(tmp_path / "logs")], epochs=3)
    assert [h["epoch"] for h in callback.history] == [1]
    unit = [float(np.asarray(img, dtype=float).mean()) / 255 for img in callback.last.images]
    assert callback.history[0]["integ_bright"] == pytest.approx(sum(unit) / 2, abs=1e-9)
    restored = JudgeCallback(["integ_bright"], PROMPTS, TinyGenerator.generate)
    restored.load_state_dict(callback.state_dict())
    assert restored.history == callback.history


def test_bad_settings_fail_at_construction(toys):
    with pytest.raises(ValueError, match="distributed"):
        JudgeCallback(["integ_bright"], PROMPTS, TinyGenerator.generate, distributed="all")
    with pytest.raises(ValueError, match="every_n_epochs"):
        JudgeCallback(["integ_bright"], PROMPTS, TinyGenerator.generate, every_n_epochs=0)
    with pytest.raises(ValueError, match="1 values for 2 prompts"):
        JudgeCallback(["integ_bright"], PROMPTS, TinyGenerator.generate, inputs={"reference": [None]})
