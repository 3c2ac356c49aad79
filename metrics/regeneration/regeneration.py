"""Image Regeneration as an `evaluate` metric: CLIP % and DINO % of regenerated images against their
references, with optional MLLM content-consistency and perceptual-quality ratings.

A thin face over `regeneration.similarity` and `regeneration.judging`: encoder ids are set
at load time (`evaluate.load(path, clip_model=..., dino_model=...)`), images come in through
`datasets.Image()` features (PIL images, paths or bytes).
"""
import datasets
import evaluate

from regeneration.judging import judge_pairs, summarize_ratings
from regeneration.similarity import (
    DEFAULT_CLIP_MODEL,
    DEFAULT_DINO_MODEL,
    POOLINGS,
    SimilarityScorer,
)

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
    judge_model (`str`, optional): a vision-language model (Hub id or local folder) for the MLLM
        ratings; without it only CLIP and DINO are computed.
    judge_backend (`str`, default "transformers"): the vlmjudge backend for `judge_model`.
    per_pair (`bool`, default False): also return the per-pair lists.
Load-time options (`evaluate.load("regeneration", clip_model=..., dino_model=..., pooling=..., device=...)`):
    clip_model (default "openai/clip-vit-base-patch32"), dino_model (default "facebook/dinov2-base"),
    pooling ("mean" or "cls", default "mean"), device (default: cuda if available).
Returns:
    `clip` and `dino`: mean cosine similarity in percent; with a judge also `mllm_content` and
    `mllm_perceptual` (means of the normalised ratings over readable answers) and
    `mllm_parse_failures`; with `per_pair=True` the lists `clip_per_pair`, `dino_per_pair`
    (and `content_per_pair`, `perceptual_per_pair`: 1-5 or None).
Examples:
    >>> metric = evaluate.load("regeneration")  # doctest: +SKIP
    >>> from PIL import Image
    >>> ref = Image.new("RGB", (64, 64), (200, 30, 30))
    >>> out = metric.compute(predictions=[ref], references=[ref])  # doctest: +SKIP
    >>> round(out["clip"], 4), round(out["dino"], 4)  # doctest: +SKIP
    (100.0, 100.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Regeneration(evaluate.Metric):
    """CLIP % and DINO % (and optional MLLM ratings) of regenerations against references."""

    def __init__(self, clip_model=DEFAULT_CLIP_MODEL, dino_model=DEFAULT_DINO_MODEL, pooling="mean", device=None,
                 **kwargs):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.clip_model, self.dino_model, self.pooling, self.device = clip_model, dino_model, pooling, device
        self._scorer = None
        super().__init__(**kwargs)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Image(), "references": datasets.Image()}),
        )

    def _download_and_prepare(self, dl_manager):
        self._scorer = SimilarityScorer(self.clip_model, self.dino_model, pooling=self.pooling, device=self.device)

    def _compute(self, predictions, references, judge_model=None, judge_backend="transformers", per_pair=False):
        if not predictions:
            raise ValueError("no image pairs to compare")
        sims = self._scorer.score(references, predictions)
        out = {"clip": sum(s["clip"] for s in sims) / len(sims), "dino": sum(s["dino"] for s in sims) / len(sims)}
        if per_pair:
            out["clip_per_pair"] = [s["clip"] for s in sims]
            out["dino_per_pair"] = [s["dino"] for s in sims]
        if judge_model is not None:
            from vlmjudge import load_judge

            ratings = judge_pairs(load_judge(judge_model, backend=judge_backend), references, predictions)
            out.update(summarize_ratings(ratings))
            if per_pair:
                out["content_per_pair"] = [r.content for r in ratings]
                out["perceptual_per_pair"] = [r.perceptual for r in ratings]
        return out
