"""The "Use in training" examples (use_in_training.md, the text of docs/training.md's section) run as written
against tiny models: model ids are swapped for tiny local checkpoints, and the objects the text
calls "yours" (a model, loaders, a pipeline) are tiny stand-ins."""
import csv
import json

import pytest
import torch

pytest.importorskip("lightning")

from integ_helpers import USE_IN_TRAINING, noise_images, python_blocks  # noqa: E402
from integ_models import Rows, TinyGenerator, TinyImageModel, hf_sample, loaders, sample  # noqa: E402

BLOCKS = python_blocks(USE_IN_TRAINING)
HUB_IDS = ("Qwen/Qwen3-VL-8B-Instruct", "openai/clip-vit-base-patch32", "facebook/dinov2-base")


class Generator(TinyGenerator):
    def generate(self, prompts):
        return sample(self, prompts)


class HFModel(TinyImageModel):
    def generate_images(self, prompts):
        return hf_sample(self, prompts)


class Pipeline:
    """A diffusers-shaped pipeline: `pipeline(prompts).images` is a list of PIL images."""

    def __call__(self, prompts):
        return type("Output", (), {"images": noise_images(len(prompts), seed=9)})()


@pytest.fixture
def run_block(tmp_path, monkeypatch, neutral_vlm_dir, encoders):
    """Exec a block in a fresh namespace, in a folder holding my_images/ (imagefolder with prompts)."""
    folder = tmp_path / "my_images"
    folder.mkdir()
    with open(folder / "metadata.jsonl", "w") as f:
        for i, (img, ref) in enumerate(zip(noise_images(2, seed=3), noise_images(2, seed=4, size=(32, 32)))):
            img.save(folder / f"{i}.png")
            ref.save(folder / f"ref{i}.png")
            f.write(json.dumps({"file_name": f"{i}.png", "reference_file_name": f"ref{i}.png",
                                "prompt": ["a red car on a street", "a cat on a sofa"][i]}) + "\n")
    monkeypatch.chdir(tmp_path)
    tiny = dict(zip(HUB_IDS, (neutral_vlm_dir, encoders["clip"], encoders["dino"])))

    def run(index, **names):
        code = BLOCKS[index]
        for hub_id, path in tiny.items():
            code = code.replace(f'"{hub_id}"', repr(path))
        namespace = dict(names)
        exec(compile(code, f"use_in_training.md block {index}", "exec"), namespace)
        return namespace
    return run


def test_the_text_has_the_five_examples():
    assert len(BLOCKS) == 5
    assert all(hub_id in USE_IN_TRAINING for hub_id in HUB_IDS)


def test_datasets_example(run_block, capsys):
    ns = run_block(0)
    ds = ns["ds"]
    assert {"terravis_score", "terravis_record", "viescore2_normalized"} <= set(ds.features)
    assert all(0 <= v <= 1 for v in ds["viescore2_normalized"][:])
    assert ds["terravis_score"][:] == [None, None]  # the neutral tiny judge finds both images N/A
    assert "not_applicable" in capsys.readouterr().out


def test_rewards_example(run_block, capsys):
    ns = run_block(1)
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(printed) == 2 and all(len(p) == 2 and all(0 <= v <= 1 for v in p) for p in printed)
    assert printed[0] == pytest.approx([0.5 * w + 0.5 * q for w, q in zip(ns["world"](ns["images"], ns["prompts"]),
                                                                          ns["quality"](ns["images"],
                                                                                        ns["prompts"]))])


def test_lightning_example(run_block, tmp_path):
    train, val = loaders()
    torch.manual_seed(0)
    ns = run_block(2, model=Generator(), train_loader=train, val_loader=val)
    with open(tmp_path / "logs" / "lightning_logs" / "version_0" / "metrics.csv") as f:
        rows = [r for r in csv.DictReader(f) if r.get("judge/viescore2")]
    assert len(rows) == 2 and all(0 <= float(r["judge/regeneration"]) <= 1 for r in rows)
    assert ns["callback"].history[-1]["epoch"] == 1


def test_hf_trainer_example(run_block):
    ns = run_block(3, hf_model=HFModel(), train_ds=Rows(), eval_ds=Rows(4))
    (entry,) = [e for e in ns["trainer"].state.log_history if "judge/viescore2" in e]
    assert 0 <= entry["judge/viescore2"] <= 1


def test_accelerate_example(run_block, tmp_path, capsys):
    from accelerate import Accelerator

    run_block(4, accelerator=Accelerator(cpu=True), pipeline=Pipeline(), global_step=5)
    assert "judge/viescore2" in capsys.readouterr().out
    assert (tmp_path / "validation" / "step-5" / "samples.jsonl").exists()
