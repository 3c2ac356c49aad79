"""JudgeTrainerCallback in a real HF `Trainer` run (CPU, report_to none) and `log_judge_scores` in an
accelerate loop: scores reach the log history, trackers and files."""
import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from integ_helpers import terravis  # noqa: E402

from vlmjudge.integrations import JudgePanel  # noqa: E402
from vlmjudge.integrations.transformers import JudgeTrainerCallback, log_judge_scores  # noqa: E402
from vlmjudge.testing.training_standins import Rows, TinyImageModel  # noqa: E402

PROMPTS = ["a red car", "a cat on a sofa"]


def trainer_for(tmp_path, callback):
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), num_train_epochs=1,
                                          per_device_train_batch_size=4, per_device_eval_batch_size=4,
                                          eval_strategy="epoch", save_strategy="no", logging_strategy="epoch",
                                          report_to="none", use_cpu=True, disable_tqdm=True)
    return transformers.Trainer(model=TinyImageModel(), args=args, train_dataset=Rows(), eval_dataset=Rows(4),
                                callbacks=[callback])


def test_trainer_run_logs_judge_scores_in_log_history(tmp_path, judge_kwargs, toys):
    callback = JudgeTrainerCallback([terravis(), "integ_bright"], PROMPTS, TinyImageModel.generate_images, judge=judge_kwargs)
    trainer = trainer_for(tmp_path, callback)
    callback.attach(trainer)
    trainer.train()
    (entry,) = [e for e in trainer.state.log_history if "judge/terravis" in e]
    assert 0 < entry["judge/terravis"] <= 1 and entry["judge/terravis_na"] == 0.0
    assert entry["epoch"] == 1.0 and entry["step"] == trainer.state.global_step
    assert entry["judge/integ_bright"] == pytest.approx(callback.last.scalars["integ_bright"])
    assert any("eval_loss" in e for e in trainer.state.log_history)
    # the samples are on disk: a grid per method and the records with their prompts
    folder = tmp_path / "out" / "judge" / f"step-{trainer.state.global_step}"
    assert (folder / "terravis.png").exists() and (folder / "integ_bright.png").exists()
    rows = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert [r["prompt"] for r in rows] == PROMPTS
    assert sum(r["terravis"]["normalized"] for r in rows) / 2 == pytest.approx(entry["judge/terravis"])
    # evaluate() returns them too (metric_for_best_model can use them)
    assert "judge/integ_bright" in trainer.evaluate()


def test_without_attach_the_scores_go_straight_into_the_log_history(tmp_path, toys):
    callback = JudgeTrainerCallback(["integ_bright"], PROMPTS, TinyImageModel.generate_images, every_n_evals=2, save_samples=False)
    state = transformers.TrainerState(epoch=1.0, global_step=7)
    args = transformers.TrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True)
    control = transformers.TrainerControl()
    model = TinyImageModel()
    metrics = {}
    callback.on_evaluate(args, state, control, model=model, metrics=metrics)
    assert state.log_history == [] and metrics == {}  # the first of every two evaluations is skipped
    callback.on_evaluate(args, state, control, model=model, metrics=metrics)
    (entry,) = state.log_history
    want = sum(float(img.float().mean()) for img in model.generate_images(PROMPTS).detach()) / 2
    assert entry["judge/integ_bright"] == pytest.approx(want, abs=1e-3)  # images are 8-bit: mean/255
    assert entry["step"] == 7 and entry["epoch"] == 1.0 and metrics["judge/integ_bright"] == entry["judge/integ_bright"]


class RecordingTracker:
    """An accelerate GeneralTracker that records scalars and, TensorBoard-like, images on a writer."""

    def __init__(self):
        from accelerate.tracking import GeneralTracker

        class Tracker(GeneralTracker):
            name = "recording"
            requires_logging_directory = False

            def __init__(self):
                super().__init__()
                self.logged, self.writer = [], self

            @property
            def tracker(self):
                return self

            def store_init_configuration(self, values):
                pass

            def log(self, values, step=None, **kwargs):
                self.logged.append((dict(values), step))

            def add_image(self, tag, array, step, dataformats="CHW"):
                self.logged.append((tag, array.shape, step, dataformats))

        self.tracker = Tracker()


def test_log_judge_scores_in_an_accelerate_loop(tmp_path, toys):
    from accelerate import Accelerator

    recording = RecordingTracker().tracker
    accelerator = Accelerator(cpu=True, log_with=[recording])
    accelerator.init_trackers("judge-test")
    panel = JudgePanel(["integ_bright"])
    images = torch.stack([torch.full((3, 8, 8), 0.2), torch.full((3, 8, 8), 0.6)])
    logs = log_judge_scores(panel, images, PROMPTS, accelerator=accelerator, step=3, out_dir=tmp_path)
    assert logs == pytest.approx({"judge/integ_bright": (51 + 153) / 2 / 255, "judge/integ_bright_na": 0.0})
    scalars, image = recording.logged
    assert scalars == (logs, 3)
    assert image[0] == "judge/integ_bright_samples" and image[2:] == (3, "HWC")
    assert (tmp_path / "step-3" / "integ_bright.png").exists()
    with pytest.raises(ValueError, match="already has its judges"):
        log_judge_scores(panel, images, PROMPTS, judge="some/model")


def test_grids_reach_tensorboard_and_wandb_report_callbacks():
    from PIL import Image

    from vlmjudge.integrations.transformers import _send_to_report_callback

    grid = Image.new("RGB", (6, 4))

    class Writer:
        def __init__(self):
            self.got = []

        def add_image(self, tag, array, step, dataformats="CHW"):
            self.got.append((tag, array.shape, step, dataformats))

    class FakeWandb:
        run = object()

        def __init__(self):
            self.got = []

        def Image(self, image):
            return ("wandb.Image", image.size)

        def log(self, values):
            self.got.append(values)

    tb = type("TensorBoardCallback", (), {"tb_writer": Writer()})()
    wb = type("WandbCallback", (), {"_wandb": FakeWandb()})()
    assert _send_to_report_callback(tb, "judge/x_samples", grid, 4)
    assert tb.tb_writer.got == [("judge/x_samples", (4, 6, 3), 4, "HWC")]
    assert _send_to_report_callback(wb, "judge/x_samples", grid, 4)
    assert wb._wandb.got == [{"judge/x_samples": ("wandb.Image", (6, 4)), "train/global_step": 4}]
    assert not _send_to_report_callback(object(), "judge/x_samples", grid, 4)
