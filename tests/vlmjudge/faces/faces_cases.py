"""The six torchmetrics Metrics as test cases of one shared tester (tests/vlmjudge/faces).

Each case builds a fresh Metric over shared resources (one tiny Qwen3-VL judge with an SQLite
response cache, tiny CLIP and DINOv2 encoders), gives four update batches, and computes the
expected value of any run of batches with the project's own Python API (the pipeline the
Metric wraps, or `viescore2.evaluation` for the grid metrics): the reference every check and
every DDP rank must reproduce.

A uniquely named module (test folders are not packages); spawned DDP ranks import it by name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from PIL import Image

#: TerraVis with short prompts, as in the scale-out tests: after "Answer:" the tiny random
#: model (yes_bias 0) finds some images eligible and others N/A, and the detection options
#: "B"/"A" keep P(violation) low, so a run is cheap and has both kinds of image.
TERRAVIS_PACK = {
    "system": "Judge the image.", "eligibility": "Is it a real scene?", "detection": "Answer Yes or No.",
    "answer_prefix": "Answer:", "severity": "{type_name}: {aspect}, {evidence}. Major or Minor?",
    "limits": {"reason": 6, "aspect": 4, "evidence": 8}, "max_new_tokens": {"reason": 16, "evidence": 24},
    "options": {"eligibility": ["Yes", "No"], "detection": ["B", "A"]}}
JUDGE_KWARGS = {"device": "cpu", "batch_size": 8}
N_IMAGES = 6
#: (update batches) the images split into; DDP rank 0 takes the first two batches, rank 1 the rest.
SPLITS = ((0, 1), (1, 3), (3, 4), (4, 6))
PROMPTS = ["a red apple on a table", "a blue car in the rain", "two cats on a sofa",
           "a lighthouse at night", "a bowl of green soup", "a child flying a kite"]
#: Ground-truth defect grids and judge-like predicted outputs for the grid metrics (a
#: parse failure, a clean image and a false alarm included).
GRID_TRUTH = ["r1: 1,2\nr2: 1,2", "r5: 5", "none", "none", "r8: 8,9", "r3: 3,4,5"]
GRID_TEXTS = ["score: 4/10\nr1: 1,2\nr3: 3", "no idea", "score: 9/10\nnone", "score: 7/10\nr4: 4,5",
              "score: 3/10\nr8: 8,9", "score: 2/10\nr3: 4"]
FLOAT_TOL = 1e-6


def qa_set(prompt: str) -> dict:
    """A two-level QA set for a prompt, so FAGER never builds a rubric in these tests."""
    subject = prompt.split(" ", 1)[1]
    return {"prompt": prompt, "items": [
        {"question": f"Is there {subject}?", "level": "level_1", "category": "existence", "importance": "high",
         "source_fact": subject},
        {"question": f"Is it exactly {prompt}?", "level": "level_2", "category": "others", "importance": "medium",
         "source_fact": prompt}]}


def write_images(folder: Path, n: int = N_IMAGES, seed: int = 0) -> list[str]:
    """n small PNGs, flat colours and noise alternating, in two sizes; their paths."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        size = (32 + 8 * (i % 2), 32)
        if i % 2:
            image = Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
        else:
            image = Image.new("RGB", size, tuple(int(c) for c in rng.integers(0, 256, 3)))
        path = folder / f"img{i}.png"
        image.save(path)
        paths.append(str(path))
    return paths


@dataclass
class Resources:
    """What every case shares: one judge, one pair of encoders, the images (and their paths)."""

    paths: dict[str, Any]  # vlm, clip, dino, cache, images: all a spawned rank needs to rebuild this
    judge: Any
    clip: Any
    dino: Any
    images: list[Image.Image]

    @classmethod
    def load(cls, paths: dict[str, Any]) -> "Resources":
        from regeneration.similarity import ClipEncoder, DinoEncoder
        from vlmjudge import load_judge
        judge = load_judge(paths["vlm"], backend="transformers", cache=paths["cache"], **JUDGE_KWARGS)
        clip = ClipEncoder(paths["clip"], device="cpu")
        dino = DinoEncoder(paths["dino"], device="cpu")
        images = [Image.open(p).convert("RGB") for p in paths["images"]]
        return cls(paths, judge, clip, dino, images)


@dataclass
class Case:
    """One Metric under test."""

    name: str
    make: Callable[[Resources], Any]                         # a new Metric over the shared resources
    batch: Callable[[Resources, int, int], tuple]            # update arguments of items [start, end)
    reference: Callable[[Resources, Sequence[int]], Any]     # the expected compute() over these items
    shared: Callable[[Any], Any] | None = None               # what copies must share (judge, encoders)

    def batches(self, res: Resources, splits: Sequence[tuple[int, int]] = SPLITS) -> list[tuple]:
        return [self.batch(res, start, end) for start, end in splits]


def _mean(values: Sequence[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return math.fsum(kept) / len(kept) if kept else math.nan


def _terravis(res: Resources, items: Sequence[int]) -> float:
    from terravis import TerraVis
    records = TerraVis(res.judge, pack=TERRAVIS_PACK).score([res.images[i] for i in items])
    return _mean([r.score for r in records])


def _viescore2(res: Resources, items: Sequence[int]) -> float:
    from viescore2 import VIEScore2
    records = VIEScore2(res.judge, fields="overall").score([res.images[i] for i in items],
                                                           [PROMPTS[i] for i in items])
    return _mean([r.overall for r in records])


def _grids(items: Sequence[int]) -> dict[str, Any]:
    from viescore2.evaluation import localization_metrics
    from viescore2.parsing import parse_grid, parse_output
    return localization_metrics([parse_output(GRID_TEXTS[i]).union for i in items],
                                [parse_grid(GRID_TRUTH[i], strict=True)[0] for i in items])


def _fager(res: Resources, items: Sequence[int]) -> float:
    from fager.core import Fager
    verdicts = Fager(res.judge).score([res.images[i] for i in items], [PROMPTS[i] for i in items],
                                      qa_sets=[qa_set(PROMPTS[i]) for i in items])
    return _mean([v.score for v in verdicts])


def _generated(res: Resources, i: int) -> Image.Image:
    """The "regeneration" of image i: the image flipped (close, but not equal, to the reference)."""
    return res.images[i].transpose(Image.Transpose.FLIP_LEFT_RIGHT)


def _regeneration(res: Resources, items: Sequence[int]) -> dict[str, float]:
    from regeneration.similarity import SimilarityScorer
    scores = SimilarityScorer(res.clip, res.dino).score([res.images[i] for i in items],
                                                        [_generated(res, i) for i in items])
    return {name: math.fsum(s[name] for s in scores) / len(scores) for name in ("clip", "dino")}


def _make_terravis(res: Resources) -> Any:
    from terravis import TerraVisScore
    return TerraVisScore(res.judge, pack=TERRAVIS_PACK)


def _make_viescore2(res: Resources) -> Any:
    from viescore2 import VIEScore2Score
    return VIEScore2Score(res.judge, fields="overall")


def _make_fager(res: Resources) -> Any:
    from fager.metric import FagerScore
    return FagerScore(res.judge, qa_sets=[qa_set(p) for p in PROMPTS])


def _make_regeneration(res: Resources) -> Any:
    from regeneration.metric import RegenerationSimilarity
    return RegenerationSimilarity(res.clip, res.dino)


def _grid_metric(kind: str) -> Callable[[Resources], Any]:
    def make(res: Resources) -> Any:
        import viescore2
        return getattr(viescore2, kind)()
    return make


def _encoders(metric: Any) -> tuple:
    return tuple(metric.scorer.encoders.values())


CASES = {
    "TerraVisScore": Case("TerraVisScore", _make_terravis, lambda r, a, b: (r.images[a:b],), _terravis,
                          lambda m: m.scorer.judge),
    "VIEScore2Score": Case("VIEScore2Score", _make_viescore2, lambda r, a, b: (r.images[a:b], PROMPTS[a:b]),
                           _viescore2, lambda m: m.scorer.judge),
    "GridIoU": Case("GridIoU", _grid_metric("GridIoU"), lambda r, a, b: (GRID_TEXTS[a:b], GRID_TRUTH[a:b]),
                    lambda r, items: _grids(items)["grid_iou"]),
    "GridF1": Case("GridF1", _grid_metric("GridF1"), lambda r, a, b: (GRID_TEXTS[a:b], GRID_TRUTH[a:b]),
                   lambda r, items: _grids(items)["micro_f1"]),
    "FagerScore": Case("FagerScore", _make_fager, lambda r, a, b: (r.images[a:b], PROMPTS[a:b]), _fager,
                       lambda m: m.fager.judge),
    "RegenerationSimilarity": Case("RegenerationSimilarity", _make_regeneration,
                                   lambda r, a, b: (r.images[a:b], [_generated(r, i) for i in range(a, b)]),
                                   _regeneration, _encoders),
}


def items_of(splits: Sequence[tuple[int, int]]) -> list[int]:
    return [i for start, end in splits for i in range(start, end)]


def plain(value: Any) -> Any:
    """A computed value as plain floats (None for NaN, or for an undefined grid metric)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, torch.Tensor):
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def assert_value(actual: Any, expected: Any, tol: float = FLOAT_TOL) -> None:
    actual, expected = plain(actual), plain(expected)
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), (actual, expected)
        for key in expected:
            assert_value(actual[key], expected[key], tol)
    elif expected is None:
        assert actual is None, f"{actual!r} != undefined"
    else:
        # relative: some Metrics return float32 (percentages near 100 keep ~7 digits)
        assert actual is not None and abs(actual - expected) <= tol * max(1.0, abs(expected)), \
            f"{actual!r} != {expected!r}"


def per_image(metric: Any) -> list | None:
    """The gathered per-image values of the Metrics that keep them (None for the others)."""
    details = metric.details() if hasattr(metric, "details") else {}
    if "scores" in details:  # RegenerationSimilarity's details() holds means only
        return details["scores"]
    if hasattr(metric, "per_image"):
        return metric.per_image().tolist()
    return None


def ddp_worker(rank: int, world_size: int, args: dict) -> dict:
    """One DDP rank: every case updated with this rank's half of the batches, then computed
    (synced over the gloo group), with its gathered per-image values."""
    res = Resources.load(args["paths"])
    half = SPLITS[:2] if rank == 0 else SPLITS[2:]
    out = {}
    for name in args["cases"]:
        metric = CASES[name].make(res)
        for batch in CASES[name].batches(res, half):
            metric.update(*batch)
        out[name] = {"value": plain(metric.compute()), "per_image": per_image(metric)}
    out["model_calls"] = res.judge.stats.model_calls
    return out
