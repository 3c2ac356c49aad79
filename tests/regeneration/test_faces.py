"""The faces: torchmetrics metric in a Lightning validation loop, the evaluate module, the method spec."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from interval_checks import check_result_keys
from regen_helpers import reference_images, replay

from regeneration.metric import RegenerationSimilarity
from regeneration.spec import NO_JUDGE, SPEC, PairRecord, build, render
from regeneration.scoring import combined_score, normalize
from vlmjudge.testing.conformance import check_method
from vlmjudge.text import format_score

METRICS_DIR = Path(__file__).resolve().parents[2] / "metrics" / "regeneration"
#: CLIP % and DINO % of the same pairs batched differently agree to this (test_similarity's
#: batched-equals-unbatched promise): float32 forwards sum in another order, about 1e-7 here.
BATCHING_TOL = 1e-5


def noise(n: int, seed: int) -> list[Image.Image]:
    rng = np.random.RandomState(seed)
    return [Image.fromarray(rng.randint(0, 256, size=(32, 40, 3), dtype=np.uint8)) for _ in range(n)]


def test_metric_states_and_values(encoder_dirs, scorer):
    refs, gens = noise(5, 1), noise(5, 2)
    metric = RegenerationSimilarity(encoder_dirs["clip"], encoder_dirs["dino"])
    metric.update(refs[:2], gens[:2])
    metric.update(refs[2:], gens[2:])
    got = metric.compute()
    expected = scorer.score(refs, gens)
    assert float(got["clip"]) == pytest.approx(sum(s["clip"] for s in expected) / 5, abs=1e-4)
    assert float(got["dino"]) == pytest.approx(sum(s["dino"] for s in expected) / 5, abs=1e-4)
    assert set(metric.state_dict()) <= {"clip_sum", "dino_sum", "count", "clip_values", "dino_values"}  # no encoders
    details = metric.details()
    for name in ("clip", "dino"):  # each mean with its interval and n, the values batched 2 + 3 against 5
        check_result_keys(details, name, [s[name] for s in expected], abs_tol=BATCHING_TOL)
    assert not list(metric.parameters())
    assert metric._reductions["clip_sum"].__name__ == "dim_zero_sum"
    fig, ax = metric.plot()
    assert ax is not None and fig.axes  # a real matplotlib figure
    metric.reset()
    with pytest.warns(UserWarning, match="before the ``update``"):  # the suite's one empty-state rule
        empty = metric.compute()
    assert set(empty) == {"clip", "dino"} and all(torch.isnan(v) for v in empty.values())
    with pytest.raises(ValueError, match="2 references but 3"):
        metric.update(refs[:2], gens[:3])
    tensor_batch = torch.stack([torch.from_numpy(np.array(im)).permute(2, 0, 1) for im in refs[:2]])
    metric.update(tensor_batch, tensor_batch)
    assert float(metric.compute()["clip"]) == pytest.approx(100.0, abs=1e-4)
    metric.reset()
    metric.update([refs[0]] * 2, [gens[0]] * 2)
    same = metric.details()  # one pair twice: the same value (two rows of one forward), a zero-width interval
    low, high = same["clip_ci"]
    assert same["clip_n"] == 2 and low <= same["clip"] <= high and high - low <= 1e-9


def test_lightning_validation_logs_the_functional_values(encoder_dirs, scorer):
    import lightning as L

    refs, gens = noise(6, 3), noise(6, 4)

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)
            self.metric = RegenerationSimilarity(encoder_dirs["clip"], encoder_dirs["dino"])

        def validation_step(self, batch, batch_idx):
            self.metric.update(batch["reference"], batch["generated"])

        def on_validation_epoch_end(self):
            self.log_dict({f"val_{k}": v for k, v in self.metric.compute().items()})
            self.metric.reset()

    pairs = [{"reference": r, "generated": g} for r, g in zip(refs, gens)]
    loader = torch.utils.data.DataLoader(pairs, batch_size=4, collate_fn=lambda rows: {
        "reference": [r["reference"] for r in rows], "generated": [r["generated"] for r in rows]})
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    (logged,) = trainer.validate(Module(), dataloaders=loader, verbose=False)
    expected = scorer.score(refs, gens)
    assert logged["val_clip"] == pytest.approx(sum(s["clip"] for s in expected) / 6, abs=1e-4)
    assert logged["val_dino"] == pytest.approx(sum(s["dino"] for s in expected) / 6, abs=1e-4)
    assert not any("metric" in key for key in Module().state_dict())


def test_evaluate_module_computes_offline(encoder_dirs, scorer, tmp_path, monkeypatch):
    import evaluate

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    refs, gens = noise(3, 5), noise(3, 6)
    paths = []
    for k, im in enumerate(gens):  # images as file paths, reference images as PIL
        paths.append(str(tmp_path / f"g{k}.png"))
        im.save(paths[-1])
    module = evaluate.load(str(METRICS_DIR), clip_model=encoder_dirs["clip"], dino_model=encoder_dirs["dino"],
                           device="cpu")
    out = module.compute(images=paths, reference_images=refs, per_pair=True)
    expected = scorer.score(refs, gens)
    assert out["clip_per_pair"] == pytest.approx([s["clip"] for s in expected], abs=1e-5)
    assert out["dino"] == pytest.approx(sum(s["dino"] for s in expected) / 3, abs=1e-5)
    assert "mllm_content" not in out
    with pytest.raises(ValueError, match="pooling"):
        evaluate.load(str(METRICS_DIR), clip_model=encoder_dirs["clip"], dino_model=encoder_dirs["dino"],
                      pooling="max")


def test_evaluate_module_with_a_judge(encoder_dirs, tmp_path, monkeypatch):
    import json

    import evaluate

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    answers = tmp_path / "answers.jsonl"
    rows = [{"meta": {"stage": "content", "item": "0", "round": 0, "index": 0}, "text": '{"reason": "r", "score": 3}'},
            {"meta": {"stage": "perceptual", "item": "0", "round": 0, "index": 0}, "text": "unreadable"}]
    answers.write_text("\n".join(json.dumps(r) for r in rows))
    module = evaluate.load(str(METRICS_DIR), clip_model=encoder_dirs["clip"], dino_model=encoder_dirs["dino"],
                           device="cpu")
    import vlmjudge.backends as backends_module
    monkeypatch.setitem(backends_module.BACKENDS, "replay_meta", "regen_helpers:MetaReplayJudge")
    out = module.compute(images=noise(1, 7), reference_images=noise(1, 8), model=str(answers),
                         backend="replay_meta")
    assert out["mllm_content"] == 0.5 and out["mllm_perceptual"] is None and out["mllm_parse_failures"] == 1


def test_spec_passes_conformance(encoder_dirs, scorer):
    refs = list(reference_images(2).values())
    batch = {"reference": refs, "generated": [refs[0], noise(1, 9)[0]]}
    records = check_method(SPEC, NO_JUDGE, batch, config={"similarity": scorer})
    assert records[0].score == pytest.approx(100.0, abs=1e-6) and records[0].mllm is None
    shown = render(records[1])
    assert "CLIP" in shown["markdown"] and shown["score_text"] == format_score(records[1].score)


def test_spec_with_judge_and_score_formula(scorer):
    assert combined_score(80.0, 60.0) == 70.0 and combined_score(80.0, -20.0) == 40.0
    assert normalize(50.0) == 0.5 and normalize(-3.0) == 0.0 and normalize(140.0) == 1.0
    refs = noise(1, 10)
    judge = replay({("content", "0", 0, 0): '{"reason": "same", "score": 5}',
                    ("perceptual", "0", 0, 0): '{"reason": "ok", "score": 2}'})
    (record,) = build(judge, similarity=scorer).score_batch({"reference": refs, "generated": refs})
    assert (record.mllm.content, record.mllm.perceptual_norm) == (5, 0.25)
    assert "5 / 5" in render(record)["markdown"]
    with pytest.raises(TypeError):
        render(object())
    with pytest.raises(ValueError, match="needs a judge"):
        build(NO_JUDGE, similarity=scorer, mllm=True)
    assert isinstance(record, PairRecord) and record.to_json()["mllm"]["content_norm"] == 1.0
    assert record.to_json()["encoders"]["dino"]["pooling"] == "mean"


def test_metric_card_states_defaults_and_paper_numbers():
    card = (METRICS_DIR / "README.md").read_text()
    assert card.startswith("---\n") and "sdk: gradio" in card and "app_file: app.py" in card
    for fact in ("openai/clip-vit-base-patch32", "facebook/dinov2-base", "mean", "(s - 1) / 4", "90.17", "92.41",
                 "93.79", "95.34"):
        assert fact in card, fact
    assert os.path.isfile(METRICS_DIR / "app.py") and os.path.isfile(METRICS_DIR / "requirements.txt")
