"""JudgeCallback under DDP (two CPU processes, gloo): sharded prompts are gathered and rank-zero
scores are broadcast, so every rank logs the score of all samples (ddp_fork: no re-imports)."""
import csv

import pytest
import torch

pytest.importorskip("lightning")

import lightning.pytorch as L  # noqa: E402
from integ_helpers import regeneration  # noqa: E402
from lightning.pytorch.loggers import CSVLogger  # noqa: E402
from PIL import Image  # noqa: E402

from vlmjudge import get_method  # noqa: E402
from vlmjudge.integrations.lightning import JudgeCallback  # noqa: E402
from vlmjudge.testing.training_standins import TinyGenerator, loaders  # noqa: E402

PROMPTS = ["a red car", "a cat on a sofa", "a bridge at night"]  # 3 prompts over 2 ranks: uneven shards


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
def test_ddp_shard_and_rank_zero_log_the_score_of_all_samples(tmp_path, encoders):
    references = [Image.new("RGB", (16, 16), c) for c in ((200, 30, 30), (90, 90, 200), (20, 160, 40))]
    method = regeneration(encoders)
    callbacks = [JudgeCallback([method], PROMPTS, TinyGenerator.generate, inputs={"reference": references}, distributed="shard",
                               prefix="shard", log_images=False),
                 JudgeCallback([method], PROMPTS, TinyGenerator.generate, inputs={"reference": references}, prefix="zero",
                               log_images=False),
                 L.callbacks.ModelCheckpoint(tmp_path / "ckpt", save_last=True)]
    train, val = loaders()
    trainer = L.Trainer(max_epochs=1, limit_train_batches=2, limit_val_batches=1, accelerator="cpu", devices=2,
                        strategy="ddp_fork", logger=CSVLogger(tmp_path / "logs"), callbacks=callbacks,
                        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    trainer.fit(TinyGenerator(), train, val)

    with open(tmp_path / "logs" / "lightning_logs" / "version_0" / "metrics.csv") as f:
        (row,) = [r for r in csv.DictReader(f) if r.get("shard/regeneration")]
    module = TinyGenerator()
    module.load_state_dict(torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=False)["state_dict"])
    with torch.no_grad():
        images = module.generate(PROMPTS)
    api = get_method("regeneration").build(None, **method.config)
    direct = [r.score / 100 for r in api.score_batch({"reference": references, "generated": list(images)})]
    want = sum(direct) / 3
    assert float(row["shard/regeneration"]) == pytest.approx(want, abs=1e-6)
    assert float(row["zero/regeneration"]) == pytest.approx(want, abs=1e-6)
