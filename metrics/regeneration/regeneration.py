"""Image Regeneration as an `evaluate` metric: CLIP %, DINO % and the regeneration score of
regenerated images against their references, with optional MLLM content-consistency and
perceptual-quality ratings.

A thin subclass of `vlmjudge.faces.ScoredModule` over the registered method
(`regeneration.spec.SPEC`): encoder ids are set at load time
(`evaluate.load(path, clip_model=..., dino_model=...)`), images come in through
`datasets.Image()` features (PIL images, paths or bytes). Pairs are scored when they are added
(`add` / `add_batch`) and only their records are stored, so in evaluate's multi-process mode
each process scores its own shard with its own encoders (and judge) and `compute()` only
aggregates.
"""
import datasets
import evaluate

from regeneration.asking.judging import MLLMScores
from regeneration.scoring import summarize_ratings
from regeneration.similarity import POOLINGS
from regeneration.spec import SPEC
from vlmjudge.faces.module import ScoredModule
from vlmjudge.stats.interval import mean_keys

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
    images (`list` of images): the regenerated images (PIL images, file paths or bytes).
    reference_images (`list` of images): the reference images, one per regenerated image.
    ids (`list` of `str`, optional): the pairs' ids (keys of the MLLM's answers; default: their order).
    per_pair (`bool`, compute only, default False): also return the per-pair lists.
Load-time options (`evaluate.load("regeneration", clip_model=..., dino_model=..., pooling=..., device=...)`):
    clip_model (default "openai/clip-vit-base-patch32"), dino_model (default "facebook/dinov2-base"),
    pooling ("mean" or "cls", default "mean"), device (encoders and judge; default: cuda if available);
    the judge arguments of every face, to rate every pair as it is added: model (a vision-language
    model; the method has no default model, so without one only CLIP and DINO are computed),
    backend, revision, dtype, cache, judge_kwargs, or judge (a loaded vlmjudge judge).
    Given to `compute` together with
    images, the judge arguments rate only the pairs given there.
Returns (the keys of every module first):
    `regeneration`: the mean regeneration score (the mean of CLIP % and DINO %, each clipped at 0),
    with `regeneration_ci` / `regeneration_n`, `scores` (per pair), `n_items`, `n_scored`; then
    `clip` and `dino`: mean cosine similarity in percent; with a judge also `mllm_content` and
    `mllm_perceptual` (means of the normalised ratings over readable answers) and
    `mllm_parse_failures`; each mean `<key>` with its 95% interval `<key>_ci` ([low, high], None
    under two values) and `<key>_n` (the values averaged); with `per_pair=True` the lists
    `clip_per_pair`, `dino_per_pair` (and `content_per_pair`, `perceptual_per_pair`: 1-5 or None).
Examples:
    Tiny random encoders, built offline, stand in for the real ones here:

    >>> import tempfile
    >>> from PIL import Image
    >>> from vlmjudge.testing import build_tiny_clip, build_tiny_dinov2
    >>> folder = tempfile.mkdtemp()
    >>> metric = evaluate.load("regeneration", clip_model=build_tiny_clip(folder + "/clip"),
    ...                        dino_model=build_tiny_dinov2(folder + "/dino"), device="cpu")
    >>> ref = Image.new("RGB", (64, 64), (200, 30, 30))
    >>> out = metric.compute(images=[ref], reference_images=[ref])
    >>> round(out["clip"], 4), round(out["dino"], 4), round(out["regeneration"], 4)
    (100.0, 100.0, 100.0)
    >>> other = Image.new("RGB", (64, 64), (20, 90, 200))
    >>> metric.add_batch(images=[ref], reference_images=[ref])
    >>> metric.add(image=other, reference_image=ref)
    >>> out = metric.compute(per_pair=True)
    >>> round(out["clip_per_pair"][0], 4), out["clip_per_pair"][1] < 100.0
    (100.0, True)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Regeneration(ScoredModule, evaluate.Metric):
    """CLIP % and DINO % (and optional MLLM ratings) of regenerations against references."""

    spec = SPEC
    columns = {"images": "generated", "reference_images": "reference"}
    required = ("images", "reference_images")
    options = ("clip_model", "dino_model", "pooling")
    judge_required = False
    compute_options = ("per_pair",)

    def __init__(self, *args, **kwargs):
        pooling = kwargs.get("pooling", "mean")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        super().__init__(*args, **kwargs)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"images": datasets.Image(), "reference_images": datasets.Image()}),
        )

    def method_config(self, settings):
        """The encoders' options and their device (the judge's too), for `spec.build`."""
        return {k: settings[k] for k in (*self.options, "device") if settings.get(k)}

    def _compute(self, record, per_pair=False):
        records = self.read_records(record)
        clip, dino = [r["clip"] for r in records], [r["dino"] for r in records]
        out = self.shared_result([r["score"] for r in records])
        out.update(**mean_keys("clip", clip), **mean_keys("dino", dino))
        if per_pair:
            out["clip_per_pair"], out["dino_per_pair"] = clip, dino
        rated = [r["mllm"] is not None for r in records]
        if any(rated):
            if not all(rated):
                raise ValueError(f"{rated.count(False)} of {len(rated)} pairs were added without a judge, so the "
                                 "MLLM ratings would cover only part of the data")
            ratings = [MLLMScores.from_json(r["mllm"]) for r in records]
            out.update(summarize_ratings(ratings))
            out.update(**mean_keys("mllm_content", [r.content_norm for r in ratings]),
                       **mean_keys("mllm_perceptual", [r.perceptual_norm for r in ratings]))
            if per_pair:
                out["content_per_pair"] = [r.content for r in ratings]
                out["perceptual_per_pair"] = [r.perceptual for r in ratings]
        return out
