"""TerraVis as an `evaluate` metric: world-grounded visual consistency of images, judged by a
multimodal LLM, with optional human ratings for the correlations.

A thin subclass of `vlmjudge.faces.ScoredModule` over the registered method: images are scored
when they are added (`add` / `add_batch`) by `terravis.spec.SPEC`'s scorer and only their
records are stored, so in evaluate's multi-process mode each process scores its own shard with
its own judge and `compute()` only aggregates.
"""
import math

import datasets
import evaluate

import terravis
from terravis import evaluation
from terravis.spec import SPEC
from vlmjudge.faces.module import ScoredModule

_CITATION = """\
@misc{terravis,
  title = {TerraVis: Towards Evaluation of World-Grounded Visual Consistency in Text-to-Image
           Generation via MLLM Workflows},
}
"""

_DESCRIPTION = """\
TerraVis asks a multimodal LLM judge whether an image is eligible (one representational picture
of macroscopic objects or scenes), then runs 18 independent violation checks (object,
interaction and scene level), rates each detected violation major or minor, and scores
S = exp(-lam * (N_major + alpha * N_minor)) (1 for a clean image). Ineligible images are N/A
and excluded from the mean. The judge is loaded in-process from a Hub id or a local folder
(`model=`), or reached through an OpenAI-compatible server (`backend="openai"`).
"""

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of images): PIL images, file paths, encoded bytes or `{"bytes", "path"}` dicts
        (the `datasets.Image()` feature), or arrays; one score per image.
    human_ratings (`list` of `float` or None, optional): the mean human 1-5 rating of each
        image, None for an image humans marked N/A. When any is given, Spearman, Kendall and
        Pearson correlations with the scores are returned (N/A on either side excluded).
    return_records (`bool`, compute only, default False): also return each image's full record
        (eligibility, every check with its evidence and severity).
    ids (`list` of `str`, optional): the images' ids in the records (default: their order).
Load-time keywords (`evaluate.load("terravis", ...)`), the judge arguments of every face:
    model: Hub id, local checkpoint folder, or server model name of the judge (no model: the
        method's default model, Qwen/Qwen3-VL-8B-Instruct); backend: "transformers" (default),
        "openai" or "replay"; revision, device, dtype, cache (SQLite path: reruns resume);
        judge_kwargs (dict, anything else for the backend, e.g. batch_size, base_url);
        judge: an already loaded `vlmjudge` Judge instead of these;
        variant ("workflow", "holistic", "gptscore"), lam (1.0), alpha (0.5), pack.
Returns (the keys of every module first):
    terravis (`float` or None): mean score over eligible images (None when none was eligible),
    terravis_ci (`list` or None): its 95% interval [low, high] (None under two scored images),
    terravis_n (`int`): the images averaged,
    scores (`list`): each image's score in the order added (None for N/A or failed),
    n_items, n_scored; then n_images (= n_items), n_not_applicable, n_failed, na_rate, n_major,
    n_minor, parse_failures,
    level_shares and type_shares (composition of the detected violations), and with human
    ratings: spearman, kendall, pearson and n_rated (pairs with both sides rated).
Examples:
    A tiny random judge, built offline, stands in for a real one here (in practice
    `model="Qwen/Qwen3-VL-8B-Instruct"`, or a server model with `backend="openai"`):

    >>> import tempfile
    >>> from PIL import Image
    >>> from vlmjudge.testing import build_tiny_vlm
    >>> tiny_judge = build_tiny_vlm(tempfile.mkdtemp() + "/tiny-vlm")
    >>> metric = evaluate.load("terravis", model=tiny_judge, device="cpu")
    >>> images = [Image.new("RGB", (32, 32), colour) for colour in ("red", "navy")]
    >>> out = metric.compute(images=images)
    >>> out["n_images"], out["n_scored"] + out["n_not_applicable"] + out["n_failed"]
    (2, 2)
    >>> all(s is None or 0.0 <= s <= 1.0 for s in out["scores"])
    True

    Images can also be added in batches (scored as they are added) before one compute:

    >>> metric.add_batch(images=images[:1])
    >>> metric.add(images=images[1])
    >>> metric.compute()["scores"] == out["scores"]
    True
"""

SUMMARY_KEYS = ("n_images", "n_scored", "n_not_applicable", "n_failed", "na_rate", "n_major", "n_minor",
                "parse_failures", "level_shares", "type_shares")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Terravis(ScoredModule, evaluate.Metric):
    """TerraVis scores of images (and their agreement with human ratings when given)."""

    spec = SPEC
    columns = {"images": "image"}
    kept = {"human_ratings": ("human_rating", datasets.Value("float64"))}
    options = ("variant", "lam", "alpha", "pack")
    ids_with_process = True
    compute_options = ("return_records",)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[datasets.Features({"images": datasets.Image()}),
                      datasets.Features({"images": datasets.Image(), "human_ratings": datasets.Value("float64")})],
        )

    def check_kept(self, name, values):
        """Human ratings: numbers in 1..5, or None (NaN) for an image humans marked N/A."""
        out = []
        for i, value in enumerate(values):
            if value is None or (isinstance(value, float) and math.isnan(value)):
                out.append(None)
            elif isinstance(value, (int, float)) and not isinstance(value, bool) and 1 <= value <= 5:
                out.append(float(value))
            else:
                raise ValueError(f"human rating {i} must be a number in 1..5 or None (N/A), got {value!r}")
        return out

    def _compute(self, record, human_rating, return_records=False):
        records = [terravis.ImageRecord.from_json(r) for r in self.read_records(record)]
        summary = terravis.summarize(records)
        out = {**self.shared_result([r.score for r in records]), **{k: summary[k] for k in SUMMARY_KEYS}}
        if any(h is not None for h in human_rating):
            human = {r.id: h for r, h in zip(records, human_rating)}
            pooled = evaluation.agreement(records, human)["pooled"]
            out.update(spearman=pooled["spearman"], kendall=pooled["kendall"], pearson=pooled["pearson"],
                       n_rated=pooled["n"])
        if return_records:
            out["records"] = [r.to_json() for r in records]
        return out
