"""Shared pieces of the scale-out tests: the test images, a cheap TerraVis prompt pack, record
comparison, a toy torchmetrics Metric, and the worker every rank of the local DDP group runs.

Spawned ranks and subprocesses import this module by name (PYTHONPATH from `subprocess_env`).
"""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CORE_TESTS = HERE.parent

# tests/vlmjudge is on sys.path through setup.cfg's pytest `pythonpath` (spawned ranks inherit it).
from toy_method import SPEC as TOY_SPEC

TOY = "toy_method:SPEC"
#: Images the multi-process runs score (the Ray run scores all N_RAY).
N_IMAGES = 8
N_RAY = 20

#: TerraVis with short prompts. After "Answer:" the tiny model (yes_bias 0) says "Yes" to
#: eligibility for about one image in five (probabilities 0.30-0.67, far from 0.5), so a run
#: has both N/A images (with a generated reason) and eligible ones (18 detection checks each);
#: detection options "B"/"A" put P(violation) near 0.1, so no evidence is generated.
PACK = {"system": "Judge the image.", "eligibility": "Is it a real scene?", "detection": "Answer Yes or No.",
        "answer_prefix": "Answer:", "severity": "{type_name}: {aspect}, {evidence}. Major or Minor?",
        "limits": {"reason": 6, "aspect": 4, "evidence": 8}, "max_new_tokens": {"reason": 16, "evidence": 24},
        "options": {"eligibility": ["Yes", "No"], "detection": ["B", "A"]}}
JUDGE_KWARGS = {"device": "cpu", "batch_size": 8}

#: Batch composition changes left padding, which moves probabilities by ~1e-7 (seen in the
#: backend tests); everything else in a record must be equal.
FLOAT_TOL = 1e-5


def write_images(folder: Path, n: int, seed: int = 0) -> list[str]:
    """n small PNGs, alternating flat colours and noise, in three sizes; their paths."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        w, h = 32 + 8 * (i % 3), 32 + 8 * (i % 2)
        if i % 2:
            image = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        else:
            image = Image.new("RGB", (w, h), tuple(int(c) for c in rng.integers(0, 256, 3)))
        path = folder / f"img{i:02d}.png"
        image.save(path)
        paths.append(str(path))
    return paths


def subprocess_env(tmp: Path, **extra: str) -> dict[str, str]:
    """Environment for worker processes: offline, one thread, this folder and the toy method importable."""
    env = dict(os.environ)
    paths = [str(HERE), str(CORE_TESTS), str(REPO), env.get("PYTHONPATH", "")]
    env.update(PYTHONPATH=os.pathsep.join(p for p in paths if p), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", HF_HOME=str(tmp / "hf"),
               **extra)
    return env


def assert_close(actual, expected, path: str = "record") -> None:
    """Equal JSON values, floats within FLOAT_TOL (NaN equals NaN), everything else exactly."""
    if isinstance(expected, float) or isinstance(actual, float):
        assert isinstance(actual, (int, float)) and isinstance(expected, (int, float)), \
            f"{path}: {actual!r} != {expected!r}"
        if math.isnan(expected) or math.isnan(actual):
            assert math.isnan(expected) and math.isnan(actual), f"{path}: {actual!r} != {expected!r}"
        else:
            assert abs(actual - expected) <= FLOAT_TOL, f"{path}: {actual!r} != {expected!r}"
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), \
            f"{path}: keys {sorted(actual) if isinstance(actual, dict) else actual!r} != {sorted(expected)}"
        for key in expected:
            assert_close(actual[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), \
            f"{path}: length {len(actual) if isinstance(actual, (list, tuple)) else actual!r} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, f"{path}[{i}]")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


class ToyMeanScore(Metric):
    """Mean toy score (P("Yes")) over images, with the per-image scores: a sum state and a cat state."""

    full_state_update = False

    def __init__(self, judge, **kwargs) -> None:
        super().__init__(**kwargs)
        self._scorer = TOY_SPEC.build(judge)
        self.add_state("total", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("scores", [], dist_reduce_fx="cat")

    def update(self, images) -> None:
        records = self._scorer.score_batch({"image": list(images)})
        values = torch.tensor([r.score for r in records], dtype=torch.float64)
        self.total += values.sum()
        self.count += len(records)
        self.scores.append(values)

    def compute(self):
        return {"mean": self.total / self.count, "count": self.count, "scores": dim_zero_cat(self.scores)}


def halves(items, rank: int, world_size: int) -> list:
    from vlmjudge.distributed import shard_range

    start, end = shard_range(len(items), world_size, rank)
    return list(items[start:end])


def group_worker(rank: int, world_size: int, args: dict) -> dict:
    """One rank of the local group, each face in turn on this rank's half of the images:
    `python -m vlmjudge.distributed` (whose accelerate PartialState forms the gloo group, as
    under torchrun), `score_dataset_accelerate`, evaluate's multi-process mode (metrics/terravis
    and a toy score-on-add module), then the toy Metric and TerraVisScore, each updated twice and
    computed with DDP sync."""
    os.environ["HF_HOME"] = args["hf_home"][rank]  # before evaluate is imported: own module cache
    # A spawned rank starts with its parent's sys.path, which holds the module cache of every
    # evaluate.load the parent ran before (another test's HF_HOME): its `evaluate_modules`
    # package would shadow this rank's own, where the modules loaded here are copied.
    sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p or ".", "evaluate_modules"))]
    import torch.distributed as dist

    from terravis.metric import TerraVisScore
    from vlmjudge.cli.distributed import main
    from vlmjudge.distributed import load_evaluate_shard, score_dataset_accelerate, shard_columns
    from vlmjudge.judge import load_judge

    paths, model = args["paths"], args["model"]
    main([TOY, "--input", args["rows"], "--output", args["cli_out"], "--model", model, "--judge-kwargs",
          json.dumps(JUDGE_KWARGS), "--stats", args["cli_stats"]])
    assert dist.is_initialized(), "accelerate did not form the process group"
    sharded = score_dataset_accelerate("terravis", {"image": paths}, model=model, judge_kwargs=JUDGE_KWARGS,
                                       method_config={"pack": PACK})

    module = load_evaluate_shard(str(REPO / "metrics" / "terravis"), experiment_id=args["experiment_id"],
                                 cache_dir=args["eval_cache"], timeout=240, model=model, pack=PACK, **JUDGE_KWARGS)
    own = shard_columns({"images": paths}, module.num_process, module.process_id)["images"]
    module.add_batch(images=own[:2])
    module.add_batch(images=own[2:])
    evaluated = module.compute(return_records=True)

    toy_module = load_evaluate_shard(str(HERE / "toy_score_on_add"), experiment_id=args["experiment_id"] + "-toy",
                                     cache_dir=args["eval_cache"], timeout=240, method=TOY, model=model,
                                     judge_kwargs=JUDGE_KWARGS)
    for part in (own[:2], own[2:]):
        toy_module.add_batch(images=part)
    toy_evaluated = toy_module.compute()

    mine = halves(paths, rank, world_size)
    judge = load_judge(model, backend="transformers", **JUDGE_KWARGS)
    toy = ToyMeanScore(judge)
    for part in (mine[:2], mine[2:]):
        toy.update(part)
    toy_calls = judge.stats.model_calls
    toy_out = toy.compute()
    tv = TerraVisScore(judge, pack=PACK)
    for part in (mine[:2], mine[2:]):
        tv.update(part)
    return {"rank": rank,
            "accelerate": {"records": sharded.records, "shards": sharded.shards, "model_calls": sharded.model_calls},
            "evaluate": {"result": evaluated, "n_added": len(own), "model_calls": module.judge.stats.model_calls},
            "evaluate_toy": {"result": toy_evaluated, "model_calls": toy_module.judge.stats.model_calls},
            "toy": {"mean": float(toy_out["mean"]), "count": int(toy_out["count"]),
                    "scores": toy_out["scores"].tolist(), "model_calls": toy_calls},
            "terravis": {"value": float(tv.compute()), "details": tv.details(),
                         "model_calls": judge.stats.model_calls - toy_calls}}
