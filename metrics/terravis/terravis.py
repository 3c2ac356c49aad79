"""TerraVis as an `evaluate` metric: world-grounded visual consistency of images, judged by a
multimodal LLM, with optional human ratings for the correlations.

A thin face over the `terravis` package. Images are scored when they are added
(`add` / `add_batch`), and only their records are stored, so in evaluate's multi-process
mode each process scores its own shard with its own judge and `compute()` only aggregates.
"""
import json
import math

import datasets
import evaluate

import terravis
from terravis import analysis
from terravis.spec import SPEC
from vlmjudge.images import to_pil_list
from vlmjudge.judge import load_judge
from vlmjudge.metric_support import ScoredRowsModule

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
Load-time keywords (`evaluate.load("terravis", ...)`):
    model: Hub id, local checkpoint folder, or server model name of the judge
        (default Qwen/Qwen3-VL-8B-Instruct); backend: "transformers" (default), "openai" or
        "replay"; judge: an already loaded `vlmjudge` Judge instead of model/backend;
        model_revision, device, dtype, batch_size, cache (SQLite path: reruns resume);
        judge_kwargs (dict, anything else for the backend, e.g. base_url for "openai");
        variant ("workflow", "holistic", "gptscore"), lam (1.0), alpha (0.5), pack.
Returns:
    terravis (`float` or None): mean score over eligible images (None when none was eligible),
    scores (`list`): each image's score in the order added (None for N/A or failed),
    n_images, n_scored, n_not_applicable, n_failed, na_rate, n_major, n_minor, parse_failures,
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

#: What is stored per image (the records), instead of the images themselves.
STORED = datasets.Features({"record": datasets.Value("string"), "human_rating": datasets.Value("float64")})
SUMMARY_KEYS = ("n_images", "n_scored", "n_not_applicable", "n_failed", "na_rate", "n_major", "n_minor",
                "parse_failures", "level_shares", "type_shares")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Terravis(ScoredRowsModule, evaluate.Metric):
    """TerraVis scores of images (and their agreement with human ratings when given)."""

    def __init__(self, *args, model=None, backend="transformers", judge=None, model_revision=None, device=None,
                 dtype=None, batch_size=8, cache=None, judge_kwargs=None, variant="workflow", lam=1.0, alpha=0.5,
                 pack=None, **kwargs):
        super().__init__(*args, **kwargs)
        if judge is not None and model is not None:
            raise ValueError("give either judge= (a loaded vlmjudge judge) or model=, not both")
        options = {"revision": model_revision, "device": device, "dtype": dtype, "cache": cache}
        self._judge_args = {"model": model, "backend": backend, "batch_size": batch_size,
                            **{k: v for k, v in options.items() if v is not None}, **dict(judge_kwargs or {})}
        self._judge = judge
        self._scorer_args = {"variant": variant, "lam": lam, "alpha": alpha, "pack": pack}
        self._scorer = None
        self._n_added = 0

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[datasets.Features({"images": datasets.Image()}),
                      datasets.Features({"images": datasets.Image(), "human_ratings": datasets.Value("float64")})],
        )

    def _download_and_prepare(self, dl_manager):
        """Load the judge once, at `evaluate.load` time."""
        self._ensure_scorer()

    def _ensure_scorer(self):
        if self._scorer is None:
            judge = self._judge
            if judge is None:
                args = dict(self._judge_args)
                model = args.pop("model") or SPEC.default_model
                judge = load_judge(model, backend=args.pop("backend"), **args)
            self._scorer = terravis.TerraVis(judge, **self._scorer_args)
        return self._scorer

    @property
    def judge(self):
        """The judge in use (its `stats` count model calls)."""
        return self._ensure_scorer().judge

    def stored_features(self):
        """What the cache files hold: one record (and human rating) per image, not the image."""
        return STORED

    def add_batch(self, *, images=None, human_ratings=None):
        """Score a batch of images now and store their records (and human ratings)."""
        if images is None:
            raise ValueError("add_batch needs images=[...]")
        if isinstance(images, (str, bytes)) or hasattr(images, "convert") or not hasattr(images, "__len__"):
            raise TypeError("images must be a list of images (wrap a single image in a list)")
        pils = to_pil_list(list(images))
        ratings = _checked_ratings(human_ratings, len(pils))
        scorer = self._ensure_scorer()
        if self.writer is None:  # in multi-process mode, the processes meet here, before any scoring
            self.selected_feature_format = STORED
            self._init_writer()
        ids = [f"{self.process_id}:{self._n_added + i}" for i in range(len(pils))]
        records = scorer.score(pils, ids=ids)
        self._n_added += len(pils)
        rows = {"record": [json.dumps(r.to_json(), ensure_ascii=False) for r in records], "human_rating": ratings}
        self.writer.write_batch(STORED.encode_batch(rows))

    def add(self, *, image=None, human_rating=None, images=None, human_ratings=None):
        """Score one image now and store its record. `images=` / `human_ratings=` (the feature
        names, which `evaluate.combine(...).add` passes) name the same one example."""
        image, human_rating = _one(image, images, "image"), _one(human_rating, human_ratings, "human_rating")
        if image is None:
            raise ValueError("add needs image=...")
        self.add_batch(images=[image], human_ratings=None if human_rating is None else [human_rating])

    def compute(self, *, images=None, human_ratings=None, predictions=None, references=None, **kwargs):
        """Score any images given here, then aggregate every stored record (all processes).
        `predictions` / `references` (which `evaluate.combine` always passes) must be None."""
        if predictions is not None or references is not None:
            raise ValueError("terravis takes images= (and human_ratings=), not predictions/references")
        if images is not None:
            self.add_batch(images=images, human_ratings=human_ratings)
        elif human_ratings is not None:
            raise ValueError("human_ratings given without images")
        if self.writer is None and self.num_process == 1:
            raise ValueError("no images to aggregate: pass images= or call add/add_batch first")
        return self.compute_stored(**kwargs)

    def _compute(self, record, human_rating, return_records=False):
        records = [terravis.ImageRecord.from_json(json.loads(r)) for r in record]
        summary = terravis.summarize(records)
        out = {"terravis": summary["mean_score"], "scores": [r.score for r in records],
               **{k: summary[k] for k in SUMMARY_KEYS}}
        if any(h is not None for h in human_rating):
            human = {r.image_id: h for r, h in zip(records, human_rating)}
            pooled = analysis.agreement(records, human)["pooled"]
            out.update(spearman=pooled["spearman"], kendall=pooled["kendall"], pearson=pooled["pearson"],
                       n_rated=pooled["n"])
        if return_records:
            out["records"] = [r.to_json() for r in records]
        return out


def _one(singular, feature_named, name):
    """The one example of `add`, given by its own name or by the feature's name (not both)."""
    if singular is not None and feature_named is not None:
        raise ValueError(f"give {name}= or {name}s=, not both")
    return singular if singular is not None else feature_named


def _checked_ratings(ratings, n):
    if ratings is None:
        return [None] * n
    ratings = list(ratings)
    if len(ratings) != n:
        raise ValueError(f"{len(ratings)} human ratings for {n} images")
    out = []
    for i, value in enumerate(ratings):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            out.append(None)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and 1 <= value <= 5:
            out.append(float(value))
        else:
            raise ValueError(f"human rating {i} must be a number in 1..5 or None (N/A), got {value!r}")
    return out
