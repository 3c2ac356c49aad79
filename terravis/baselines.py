"""The single-call baselines: TerraVis-H (holistic, full taxonomy) and GPTScore (generic).

Each asks one question per image and reads a 1-5 rating (or, for TerraVis-H, N/A) from
the first answer token. The record keeps the rating and scores it as (rating - 1) / 4, so
every TerraVis variant reports in [0, 1]; correlations are unchanged by that map (the
paper does not normalise these ratings; this is our choice).
"""
from __future__ import annotations

from collections import Counter
from typing import Literal, Sequence

from vlmjudge.judge import Judge

from . import asking
from .pack import PromptPack
from .records import ImageRecord
from .workflow import Item, WorkflowConfig, count_truncated, fail, note_mass

RatingVariant = Literal["holistic", "gptscore"]


def rating_score(rating: int) -> float:
    """A 1-5 rating on [0, 1]."""
    if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
        raise ValueError(f"rating must be an integer 1..5, got {rating!r}")
    return (rating - 1) / 4


def run_rating(judge: Judge, items: Sequence[Item], pack: PromptPack, variant: RatingVariant,
               config: WorkflowConfig, counts: Counter | None = None) -> list[ImageRecord]:
    """Rate every image with one batched call; unreadable answers are retried, then the
    image fails (counted), never scored silently."""
    if variant == "holistic":
        options, build = pack.options.holistic, asking.holistic_request
    elif variant == "gptscore":
        options, build = pack.options.gptscore, asking.gptscore_request
    else:
        raise ValueError(f"rating variant must be 'holistic' or 'gptscore', got {variant!r}")
    counts = counts if counts is not None else Counter()
    records = [ImageRecord(id=it.image_id, variant=variant, lam=config.lam, alpha=config.alpha,
                           meta=dict(it.meta)) for it in items]
    base = [build(pack, it.image, it.image_id) for it in items]
    asked = [asking.as_decision_request(r, pack, config.decision, options) for r in base]
    counts[variant] += len(asked)
    decisions = asking.decide(judge, asked, options, config.decision)
    for attempt in range(1, config.max_retries + 1):
        todo = [i for i, d in enumerate(decisions) if d.outcome == "unparseable"]
        if not todo:
            break
        for i in todo:
            records[i].retries += 1
            records[i].parse_failures += 1
        again = [asking.as_decision_request(base[i], pack, config.decision, options, attempt,
                                            config.retry_temperature) for i in todo]
        counts["retries"] += len(again)
        for i, d in zip(todo, asking.decide(judge, again, options, config.decision)):
            decisions[i] = d
    count_truncated(counts, decisions)
    for record, d in zip(records, decisions):
        record.rating_probs = d.probs
        note_mass(record, d, variant)
        if d.outcome == "failed":
            fail(record, variant, d)
        elif d.outcome == "unparseable":
            record.status = "failed"
            record.parse_failures += 1
            record.errors.append(f"{variant}: no rating could be read")
        elif variant == "holistic" and d.option == options[-1]:
            record.status, record.eligible = "not_applicable", False
        else:
            record.eligible = True
            record.rating = options.index(d.option) + 1
            record.score = rating_score(record.rating)
    return records
