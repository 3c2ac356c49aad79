"""Image Regeneration as an `evaluate` metric: CLIP % and DINO % of regenerated images against their
references, with optional MLLM content-consistency and perceptual-quality ratings.

A thin face over `regeneration.similarity` and `regeneration.judging`: encoder ids are set
at load time (`evaluate.load(path, clip_model=..., dino_model=...)`), images come in through
`datasets.Image()` features (PIL images, paths or bytes). Pairs are scored when they are added
(`add` / `add_batch`) and only their scores are stored, so in evaluate's multi-process mode each
process scores its own shard with its own encoders (and judge) and `compute()` only aggregates.
"""
import json

import datasets
import evaluate

from regeneration.judging import MLLMScores, judge_pairs, summarize_ratings
from regeneration.similarity import (
    DEFAULT_CLIP_MODEL,
    DEFAULT_DINO_MODEL,
    POOLINGS,
    SimilarityScorer,
)
from vlmjudge.distributed import store_scored_rows
from vlmjudge.metric_support import ScoredRowsModule

_CITATION = """\
@misc{imagerepainter,
  title = {Image Regeneration: Evaluating Text-to-Image Model via Generating Identical Image with Multimodal Large Language Models},
}
"""

_DESCRIPTION = """\
Image Regeneration evaluates a text-to-image model by asking it to paint a reference image again
(from a prompt an MLLM wrote for that reference) and measuring how close the regeneration is.
This module measures the closeness of given (reference, regenerated) pairs: the image-image
cosine of CLIP projected image embeddings and of DINOv2 features (mean over all output tokens by
default), both in percent, averaged over pairs; optionally an MLLM's 1-5 ratings of content
consistency and perceptual quality, normalised by (s - 1) / 4.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of images): the regenerated images (PIL images, file paths or bytes).
    references (`list` of images): the reference images, one per prediction.
    judge_model (`str`, optional, with predictions given to compute only): a vision-language model
        (Hub id or local folder) rating the pairs given to this compute call; without any judge only
        CLIP and DINO are computed.
    judge_backend (`str`, default "transformers"): the vlmjudge backend for `judge_model`.
    per_pair (`bool`, compute only, default False): also return the per-pair lists.
Load-time options (`evaluate.load("regeneration", clip_model=..., dino_model=..., pooling=..., device=...)`):
    clip_model (default "openai/clip-vit-base-patch32"), dino_model (default "facebook/dinov2-base"),
    pooling ("mean" or "cls", default "mean"), device (default: cuda if available);
    judge_model / judge_backend (as above, rating every pair as it is added) or judge (a loaded
    vlmjudge judge).
Returns:
    `clip` and `dino`: mean cosine similarity in percent; with a judge also `mllm_content` and
    `mllm_perceptual` (means of the normalised ratings over readable answers) and
    `mllm_parse_failures`; with `per_pair=True` the lists `clip_per_pair`, `dino_per_pair`
    (and `content_per_pair`, `perceptual_per_pair`: 1-5 or None).
Examples:
    Tiny random encoders, built offline, stand in for the real ones here:

    >>> import tempfile
    >>> from PIL import Image
    >>> from vlmjudge.testing import build_tiny_clip, build_tiny_dinov2
    >>> folder = tempfile.mkdtemp()
    >>> metric = evaluate.load("regeneration", clip_model=build_tiny_clip(folder + "/clip"),
    ...                        dino_model=build_tiny_dinov2(folder + "/dino"), device="cpu")
    >>> ref = Image.new("RGB", (64, 64), (200, 30, 30))
    >>> out = metric.compute(predictions=[ref], references=[ref])
    >>> round(out["clip"], 4), round(out["dino"], 4)
    (100.0, 100.0)
    >>> other = Image.new("RGB", (64, 64), (20, 90, 200))
    >>> metric.add_batch(predictions=[ref], references=[ref])
    >>> metric.add(prediction=other, reference=ref)
    >>> out = metric.compute(per_pair=True)
    >>> round(out["clip_per_pair"][0], 4), out["clip_per_pair"][1] < 100.0
    (100.0, True)
"""


#: What is stored per pair (its scores), instead of the images themselves.
STORED = datasets.Features({"clip": datasets.Value("float64"), "dino": datasets.Value("float64"),
                            "mllm": datasets.Value("string")})


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Regeneration(ScoredRowsModule, evaluate.Metric):
    """CLIP % and DINO % (and optional MLLM ratings) of regenerations against references."""

    def __init__(self, clip_model=DEFAULT_CLIP_MODEL, dino_model=DEFAULT_DINO_MODEL, pooling="mean", device=None,
                 judge_model=None, judge_backend="transformers", judge=None, **kwargs):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if judge is not None and judge_model is not None:
            raise ValueError("give either judge= (a loaded vlmjudge judge) or judge_model=, not both")
        self.clip_model, self.dino_model, self.pooling, self.device = clip_model, dino_model, pooling, device
        self._judge_spec = (judge_model, judge_backend)
        self.judge = judge
        self._scorer = None
        self._n_added = 0
        super().__init__(**kwargs)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Image(), "references": datasets.Image()}),
        )

    def _download_and_prepare(self, dl_manager):
        """Load the encoders (and the load-time judge) once, at `evaluate.load` time."""
        self._scorer = SimilarityScorer(self.clip_model, self.dino_model, pooling=self.pooling, device=self.device)
        if self.judge is None and self._judge_spec[0] is not None:
            self.judge = _load_judge(*self._judge_spec)

    def stored_features(self):
        """What the cache files hold: one row of scores per pair, not the images."""
        return STORED

    def add_batch(self, *, predictions=None, references=None, judge=None):
        """Score a batch of (reference, regenerated) pairs now and store their scores."""
        if predictions is None or references is None:
            raise ValueError("add_batch needs predictions=[...] and references=[...]")
        for name, images in (("predictions", predictions), ("references", references)):
            if isinstance(images, (str, bytes)) or hasattr(images, "convert") or not hasattr(images, "__len__"):
                raise TypeError(f"{name} must be a list of images (wrap a single image in a list)")
        predictions, references = list(predictions), list(references)
        if len(predictions) != len(references):
            raise ValueError(f"{len(references)} references but {len(predictions)} predictions")
        sims = self._scorer.score(references, predictions)
        judge = judge if judge is not None else self.judge
        mllm = [""] * len(sims)
        if judge is not None:
            prefix = "" if self.num_process == 1 else f"{self.process_id}:"
            items = [f"{prefix}{self._n_added + k}" for k in range(len(sims))]
            ratings = judge_pairs(judge, references, predictions, items=items)
            mllm = [json.dumps(r.to_json(), ensure_ascii=False) for r in ratings]
        self._n_added += len(sims)
        rows = {"clip": [s["clip"] for s in sims], "dino": [s["dino"] for s in sims], "mllm": mllm}
        store_scored_rows(self, STORED, rows)

    def add(self, *, prediction=None, reference=None, predictions=None, references=None):
        """Score one (reference, regenerated) pair now and store its scores. `predictions=` /
        `references=` (the feature names, which `evaluate.combine(...).add` passes) name the same pair."""
        prediction, reference = _one(prediction, predictions, "prediction"), _one(reference, references, "reference")
        if prediction is None or reference is None:
            raise ValueError("add needs prediction=... and reference=...")
        self.add_batch(predictions=[prediction], references=[reference])

    def compute(self, *, predictions=None, references=None, judge_model=None, judge_backend="transformers",
                **kwargs):
        """Score any pairs given here, then aggregate every stored pair (all processes)."""
        if predictions is not None or references is not None:
            judge = _load_judge(judge_model, judge_backend) if judge_model is not None else None
            self.add_batch(predictions=predictions, references=references, judge=judge)
        elif judge_model is not None:
            raise ValueError("judge_model= at compute rates only the pairs given there; pass it at load time "
                             "to rate pairs as they are added")
        if self.writer is None and self.num_process == 1:
            raise ValueError("no image pairs to compare: pass predictions= and references= or call add_batch first")
        return self.compute_stored(**kwargs)

    def _compute(self, clip, dino, mllm, per_pair=False):
        if not clip:
            raise ValueError("no image pairs to compare")
        out = {"clip": sum(clip) / len(clip), "dino": sum(dino) / len(dino)}
        if per_pair:
            out["clip_per_pair"], out["dino_per_pair"] = list(clip), list(dino)
        rated = [bool(m) for m in mllm]
        if any(rated):
            if not all(rated):
                raise ValueError(f"{rated.count(False)} of {len(rated)} pairs were added without a judge, so the "
                                 "MLLM ratings would cover only part of the data")
            ratings = [MLLMScores.from_json(json.loads(m)) for m in mllm]
            out.update(summarize_ratings(ratings))
            if per_pair:
                out["content_per_pair"] = [r.content for r in ratings]
                out["perceptual_per_pair"] = [r.perceptual for r in ratings]
        return out


def _one(singular, feature_named, name):
    """The one pair member of `add`, given by its own name or by the feature's name (not both)."""
    if singular is not None and feature_named is not None:
        raise ValueError(f"give {name}= or {name}s=, not both")
    return singular if singular is not None else feature_named


def _load_judge(model, backend):
    from vlmjudge import load_judge

    return load_judge(model, backend=backend)
