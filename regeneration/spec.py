"""Image Regeneration as a registered method (`vlmjudge.methods` entry point
`regeneration = regeneration.spec:SPEC`): scores a regeneration against its reference.

The score is the mean of CLIP % and DINO % with each cosine clipped at 0, on 0..100;
`normalize` divides by 100. With a judge (an MLLM) the record also carries the 1-5
content-consistency and perceptual-quality ratings; the score never depends on them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlmjudge.registry import MethodSpec, renders
from vlmjudge.text import format_score

from .human import PROTOCOL
from .annotation import ANNOTATION
from .asking.judging import MLLMScores, judge_pairs
from .scoring import combined_score, normalize
from .similarity import DEFAULT_CLIP_MODEL, DEFAULT_DINO_MODEL, SimilarityScorer
from .statistics import STATISTICS


class _NoJudge:
    """Stands for "no MLLM": similarity only (what a Space without a VLM serves)."""

    def __repr__(self) -> str:
        return "NO_JUDGE"


NO_JUDGE = _NoJudge()


def _has_judge(judge: Any) -> bool:
    return judge is not None and judge is not NO_JUDGE and hasattr(judge, "generate")


@dataclass
class PairRecord:
    """One (reference, generated) pair: its id, CLIP %, DINO %, the combined score, optional MLLM ratings."""

    id: str
    clip: float | None
    dino: float | None
    score: float | None
    valid: bool
    mllm: MLLMScores | None = None
    errors: list[str] = field(default_factory=list)
    encoders: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """The shared status (`vlmjudge.record_schema`): scored, or failed (`errors` say why)."""
        return "scored" if self.score is not None else "failed"

    def to_json(self) -> dict[str, Any]:
        """The record in the shared layout: id, status, score, then the pair's own fields."""
        return {"id": self.id, "status": self.status, "score": self.score, "valid": self.valid, "clip": self.clip, "dino": self.dino,
                "mllm": self.mllm.to_json() if self.mllm else None, "errors": list(self.errors),
                "encoders": self.encoders}



class RegenerationScorer:
    """Scores batches with columns `reference` and `generated` (and MLLM ratings when a judge is set).

    An optional `id` column names the pairs in the MLLM's requests (their `meta["item"]`, which no
    cache key hashes; default: their order in the batch), so ids given with the pairs key the ratings.

    Examples:
        A stand-in for the encoders that calls every pair identical, and a replay judge keyed by
        (stage, item), so only the pair named "cat" is answered:

        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> class Same:
        ...     encoders = {"clip": "c", "dino": "d"}
        ...     def score(self, refs, gens):
        ...         return [{"clip": 100.0, "dino": 100.0} for _ in gens]
        ...     def manifest(self):
        ...         return {}
        >>> judge = ReplayJudge({("content", "cat"): '{"reason": "same", "score": 5}',
        ...                      ("perceptual", "cat"): '{"reason": "clean", "score": 4}'}, key_fields=("stage", "item"))
        >>> image = Image.new("RGB", (32, 32), "red")
        >>> [record] = RegenerationScorer(judge, similarity=Same()).score_batch(
        ...     {"reference": [image], "generated": [image], "id": ["cat"]})
        >>> record.score, record.mllm.content, record.mllm.perceptual
        (100.0, 5, 4)
    """

    inputs = ("reference", "generated")

    def __init__(self, judge: Any = None, *, clip_model: str = DEFAULT_CLIP_MODEL,
                 dino_model: str = DEFAULT_DINO_MODEL, pooling: str = "mean", device: str | None = None,
                 dtype: str | None = None, mllm: bool | None = None, similarity: SimilarityScorer | None = None,
                 pack: Any = None) -> None:
        self.similarity = similarity or SimilarityScorer(clip_model, dino_model, pooling=pooling, device=device,
                                                         dtype=dtype)
        missing = {"clip", "dino"} - set(self.similarity.encoders)
        if missing:
            raise ValueError(f"the regeneration score needs both encoders; missing {sorted(missing)}")
        self.mllm = _has_judge(judge) if mllm is None else mllm
        if self.mllm and not _has_judge(judge):
            raise ValueError("mllm=True needs a judge")
        self.judge, self.pack = judge, pack

    def score_batch(self, batch: Mapping[str, Sequence[Any]]) -> list[PairRecord]:
        SPEC.check_batch(batch)
        refs, gens = list(batch["reference"]), list(batch["generated"])
        sims = self.similarity.score(refs, gens)
        ratings = (judge_pairs(self.judge, refs, gens, items=batch.get("id"), pack=self.pack) if self.mllm
                   else [None] * len(gens))
        made_by = self.similarity.manifest()
        ids = [str(i) for i in batch["id"]] if "id" in batch else [str(i) for i in range(len(gens))]
        return [PairRecord(id=i, clip=s["clip"], dino=s["dino"], score=combined_score(s["clip"], s["dino"]), valid=True,
                           mllm=m, encoders=made_by) for i, s, m in zip(ids, sims, ratings)]


def build(judge: Any, **config: Any) -> RegenerationScorer:
    """A scorer; config: clip_model, dino_model, pooling, device, dtype, mllm (default: iff a judge is given)."""
    return RegenerationScorer(judge, **config)



@renders("regeneration", PairRecord)
def render(record: PairRecord) -> dict[str, Any]:
    """Score text and a markdown table of CLIP %, DINO % and the MLLM ratings."""
    if record.score is None:
        return {"score_text": "N/A", "markdown": "Could not score: " + "; ".join(record.errors)}
    lines = ["| measure | value |", "|---|---|", f"| CLIP image-image cosine | {format_score(record.clip)} % |",
             f"| DINOv2 image-image cosine | {format_score(record.dino)} % |",
             f"| score (mean, each clipped at 0) | {format_score(record.score)} |"]
    m = record.mllm
    if m is not None:
        for label, raw, norm in (("MLLM content consistency", m.content, m.content_norm),
                                 ("MLLM perceptual quality", m.perceptual, m.perceptual_norm)):
            lines.append(f"| {label} | {raw} / 5 ((s-1)/4 = {format_score(norm)}) |" if raw is not None
                         else f"| {label} | unreadable answer |")
    return {"score_text": format_score(record.score), "markdown": "\n".join(lines)}


#: `normalize` clips to the range before scaling (`scoring.normalize`); no judge model by default.
SPEC = MethodSpec(
    name="regeneration", inputs=RegenerationScorer.inputs, build=build, render=render, normalize=normalize,
    optional_inputs=("id",), score_range=(0.0, 100.0), default_model=None, human=PROTOCOL,
    description="Image Regeneration: how close a regenerated image is to its reference, as the mean of "
                "CLIP and DINOv2 image-image cosine (%), with optional MLLM content and perceptual ratings.",
    statistics=STATISTICS,
    annotation=ANNOTATION,
)
