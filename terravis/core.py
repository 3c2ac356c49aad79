"""`TerraVis`: score images for world-grounded visual consistency with a judge.

    judge = vlmjudge.load_judge("Qwen/Qwen3-VL-8B-Instruct")
    tv = TerraVis(judge)                      # variant="workflow", lam=1.0, alpha=0.5
    records = tv.score(images)                # one ImageRecord per image (score None = N/A)
    summary = tv.summarize(records)           # mean over eligible images, N/A rate, shares
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from vlmjudge.judge import Judge

from .baselines import run_rating
from .pack import PromptPack, load_pack
from .records import ImageRecord
from .scoring import mean_score, na_rate, violation_breakdown
from .workflow import BLOCK_IMAGES, Item, Workflow, WorkflowConfig, reference_records

VARIANTS = ("workflow", "holistic", "gptscore")
#: How TerraVis reads and scores answers; bumped whenever a default changes what a saved run would
#: hold, so records made before are not mixed with new ones. 2: generated decisions are read after
#: the prefix label as the release reads labelled answers (echoes rejected, the last label first),
#: a blank answer is an unreadable answer rather than a failed request, and an unreadable answer is
#: asked twice more (at 0.4, then 0.6), as the release asks (issue 18).
METHOD_VERSION = "2"


@dataclass
class RunResult:
    """A run's records, its manifest, and the requests asked per stage (retries apart)."""

    records: list[ImageRecord]
    manifest: dict[str, Any]
    counts: dict[str, int] = field(default_factory=dict)


class TerraVis:
    """The TerraVis metric over any `vlmjudge` judge: the staged workflow (default) or one of
    its single-call baselines, "holistic" (TerraVis-H) and "gptscore".

    Args:
        judge: a `vlmjudge` Judge (`vlmjudge.load_judge`).
        variant: "workflow" (the staged method), "holistic" (TerraVis-H: one call, a 1-5 rating)
            or "gptscore" (the paper's generic 1-5 question).
        lam, alpha: the weights of S = exp(-lam (N_major + alpha N_minor)); the paper's 1 and 0.5.
        pack: the prompt pack (`terravis.load_pack`): None for the default, a shipped name, a JSON
            path, or a dict laid over the default.
        decision: how each yes/no or major/minor decision is read: "choice" (the options'
            probabilities) or "generate" (constrained generation, for servers without logprobs).
        eligibility_reasons: which images get a generated reason for their eligibility: "na" (the
            ineligible ones), "all" or "none".
        severity_reasons: also generate a reason for each severity.
        max_retries: how often an unreadable eligibility (or rating) answer is asked again.
        retry_temperature: the sampling temperature of each retry (one number for every retry).
        block_images: images per pass through the stages (`terravis.workflow.BLOCK_IMAGES`).

    Examples:
        A replay judge keyed by (image, stage, check) stands in for a VLM. The cup is eligible
        and one check finds a major violation, so its score is exp(-1); the logo is N/A:

        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> from terravis.taxonomy import TYPE_IDS
        >>> answers = {("cup", "eligibility", ""): "Yes", ("logo", "eligibility", ""): "No",
        ...            ("logo", "eligibility_reason", ""): '{"reason": "A flat logo on white."}'}
        >>> answers.update({("cup", "detection", t): "No" for t in TYPE_IDS})
        >>> answers["cup", "detection", "support_stability"] = "Yes"
        >>> answers["cup", "evidence", "support_stability"] = '{"aspect": "cup", "evidence": "It hangs in mid-air."}'
        >>> answers["cup", "severity", "support_stability"] = "Major"
        >>> judge = ReplayJudge(answers, key_fields=("item", "stage", "check"))
        >>> cup, logo = TerraVis(judge).score([Image.new("RGB", (64, 64)), Image.new("RGB", (64, 64), "white")],
        ...                                   ids=["cup", "logo"])
        >>> round(cup.score, 4), cup.n_major, [c.evidence for c in cup.checks if c.detected]
        (0.3679, 1, ['It hangs in mid-air.'])
        >>> logo.score is None, logo.eligibility_reason
        (True, 'A flat logo on white.')
    """

    def __init__(self, judge: Judge, variant: Literal["workflow", "holistic", "gptscore"] = "workflow",
                 lam: float = 1.0, alpha: float = 0.5,
                 pack: PromptPack | Mapping[str, Any] | str | os.PathLike | None = None, *,
                 decision: Literal["choice", "generate"] = "choice",
                 eligibility_reasons: Literal["na", "all", "none"] = "na", severity_reasons: bool = False,
                 max_retries: int = 2, retry_temperature: float | Sequence[float] = (0.4, 0.6),
                 block_images: int = BLOCK_IMAGES) -> None:
        if not isinstance(judge, Judge):
            raise TypeError(f"TerraVis needs a vlmjudge Judge (see vlmjudge.load_judge), got {type(judge).__name__}")
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        self.judge = judge
        self.variant = variant
        self.pack = load_pack(pack)
        self.config = WorkflowConfig(lam=lam, alpha=alpha, decision=decision,
                                     eligibility_reasons=eligibility_reasons, severity_reasons=severity_reasons,
                                     max_retries=max_retries, retry_temperature=retry_temperature)
        if block_images < 1:
            raise ValueError(f"block_images must be >= 1, got {block_images}")
        self.block_images = block_images  # images per pass through the stages (see workflow.BLOCK_IMAGES)
        self.last_counts: dict[str, int] = {}

    @property
    def lam(self) -> float:
        return self.config.lam

    @property
    def alpha(self) -> float:
        return self.config.alpha

    def run(self, images: Sequence[Any], ids: Sequence[str] | None = None,
            meta: Sequence[Mapping[str, Any]] | None = None) -> RunResult:
        """Score many images in stage-batched judge calls; records, manifest and counts."""
        items = make_items(images, ids, meta)
        counts: Counter = Counter()
        if self.variant == "workflow":
            flow = Workflow(self.judge, self.pack, self.config, self.block_images)
            records = flow.run(items)
            counts = flow.counts
        else:
            records = run_rating(self.judge, items, self.pack, self.variant, self.config, counts)
        self.last_counts = dict(counts)
        return RunResult(records, self.manifest(), dict(counts))

    def score(self, images: Sequence[Any], ids: Sequence[str] | None = None,
              meta: Sequence[Mapping[str, Any]] | None = None) -> list[ImageRecord]:
        """One record per image, in order (`record.score` is None for N/A or failed images)."""
        return self.run(images, ids, meta).records

    def score_batch(self, batch: Mapping[str, Sequence[Any]]) -> list[ImageRecord]:
        """The registry's Scorer interface: a batch of columns, "image" required, "id" optional."""
        if "image" not in batch:
            raise ValueError(f"terravis: batch lacks the 'image' column (has {sorted(batch)})")
        ids = batch.get("id")
        return self.score(list(batch["image"]), [str(i) for i in ids] if ids is not None else None)

    def reference(self, images: Sequence[Any], ids: Sequence[str] | None = None,
                  meta: Sequence[Mapping[str, Any]] | None = None) -> list[ImageRecord]:
        """Records from the slow reference path (full constrained answers, one image at a time)."""
        if self.variant != "workflow":
            raise ValueError("the reference path exists for the workflow variant only")
        return reference_records(self.judge, make_items(images, ids, meta), self.pack, self.config)

    def manifest(self) -> dict[str, Any]:
        """What produced the records: judge, pack, decoding, weights, library version."""
        from vlmjudge import __version__

        return {
            "method": "terravis", "method_version": METHOD_VERSION, "variant": self.variant, **self.judge.manifest(),
            "pack_version": self.pack.version, "pack_sha256": self.pack.sha256,
            "decoding": {"decision": self.config.decision, "decision_max_new_tokens": 1, "temperature": 0.0,
                         "text_max_new_tokens": dict(self.pack.max_new_tokens),
                         "retry_temperature": (list(self.config.retry_temperature)
                                               if isinstance(self.config.retry_temperature, tuple)
                                               else self.config.retry_temperature),
                         "max_retries": self.config.max_retries},
            "eligibility_reasons": self.config.eligibility_reasons,
            "severity_reasons": self.config.severity_reasons,
            "lam": self.config.lam, "alpha": self.config.alpha, "library_version": __version__,
        }

    @staticmethod
    def summarize(records: Sequence[ImageRecord]) -> dict[str, Any]:
        """Aggregate records: see `summarize`."""
        return summarize(records)


def summarize(records: Sequence[ImageRecord]) -> dict[str, Any]:
    """Mean score over scored images, N/A rate (ineligible and failed), violation counts and
    shares by level and type, severities, parse failures and retries."""
    if not records:
        raise ValueError("summarize needs at least one record")
    scores = [r.score for r in records]
    status = Counter(r.status for r in records)
    scored = [r for r in records if r.score is not None]
    ratings = [r.rating for r in scored if r.rating is not None]
    return {
        "n_images": len(records), "n_scored": status["scored"], "n_not_applicable": status["not_applicable"],
        "n_failed": status["failed"], "na_rate": na_rate(scores), "mean_score": mean_score(scores),
        "mean_rating": sum(ratings) / len(ratings) if ratings else None,
        "n_major": sum(r.n_major for r in scored), "n_minor": sum(r.n_minor for r in scored),
        "images_with_violation": sum(bool(r.has_violation) for r in scored),
        **violation_breakdown(t for r in scored for t in r.detected_types()),
        "parse_failures": sum(r.parse_failures for r in records), "retries": sum(r.retries for r in records),
    }


def make_items(images: Sequence[Any], ids: Sequence[str] | None = None,
               meta: Sequence[Mapping[str, Any]] | None = None) -> list[Item]:
    """Images with unique string ids (default "0", "1", ...) and per-image metadata."""
    if isinstance(images, (str, bytes, os.PathLike)) or hasattr(images, "convert") or not hasattr(images, "__len__"):
        raise TypeError("images must be a sequence of images (wrap a single image in a list)")
    images = list(images)
    if not images:
        raise ValueError("no images to score")
    ids = [str(i) for i in range(len(images))] if ids is None else [str(i) for i in ids]
    if len(ids) != len(images):
        raise ValueError(f"{len(ids)} ids for {len(images)} images")
    if len(set(ids)) != len(ids):
        raise ValueError("image ids must be unique")
    metas = [dict(m) for m in meta] if meta is not None else [{} for _ in images]
    if len(metas) != len(images):
        raise ValueError(f"{len(metas)} meta entries for {len(images)} images")
    return [Item(i, img, m) for i, img, m in zip(ids, images, metas)]
