"""What every TerraVis benchmark sets up the same way: the pack, forced decisions, records.

`bench.terravis` (the paths), `bench.side_by_side` (the backends) and `bench.random_vlm` (a
random model at a real size) all score with the default pack whose eligibility is answered by
its own words, make a random model find every image eligible and a chosen share of checks
positive, and compare records by the same fields. Those live here, so that no benchmark
imports another's command module for them.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import LogitShift, judge_on, option_token_ids, shift_for_rate

#: Positive rate aimed at when a random model's decisions are calibrated.
TARGET_RATE = 0.3
#: Eligibility options of the benchmark pack: words other than the detection options, so that a
#: random model can be made to find every image eligible without moving its detection rate.
ELIGIBILITY_OPTIONS = ("Eligible", "Ineligible")
#: Logit added to the first eligibility option: every image is eligible (all stages run).
ELIGIBLE_SHIFT = 50.0


def bench_pack() -> Any:
    """The default pack with eligibility answered by its own words (`ELIGIBILITY_OPTIONS`);
    every other text, option and budget is the default one."""
    import re

    from terravis.pack import load_pack
    data = load_pack(None).model_dump()
    yes, no = ELIGIBILITY_OPTIONS
    data["eligibility"] = re.sub(r"\bNo\b", no, re.sub(r"\bYes\b", yes, data["eligibility"]))
    data["options"] = {**data["options"], "eligibility": [yes, no]}
    data["version"] = data["version"] + "+bench-eligibility"
    return load_pack(data)


# -- forcing a random model's decisions (a forward hook: this process only) --------------------
def make_all_eligible(model: Any, processor: Any) -> LogitShift:
    """Shift the first eligibility option's logits by `ELIGIBLE_SHIFT`: every image is eligible."""
    return LogitShift(model, option_token_ids(processor.tokenizer, ELIGIBILITY_OPTIONS[0]), ELIGIBLE_SHIFT)


def detection_margins(model: Any, processor: Any, images: Sequence[Any]) -> list[float]:
    """log P(Yes)/P(No) of every detection question on these images."""
    from terravis import asking
    from terravis.taxonomy import TAXONOMY
    pack = bench_pack()
    opts = pack.options.detection
    requests = [asking.detection_request(pack, im, str(i), v) for i, im in enumerate(images) for v in TAXONOMY]
    probs = judge_on(model, processor).choice_probs(requests, opts)
    return [float(np.log(p[opts[0]] / p[opts[1]])) for p in probs]


def force_positive_rate(model: Any, processor: Any, images: Sequence[Any], rate: float) -> LogitShift:
    """Shift the Yes logits so that `rate` of the detection checks on two images are positive."""
    shift = LogitShift(model, option_token_ids(processor.tokenizer, "Yes"))
    shift.shift = shift_for_rate(detection_margins(model, processor, images[:2]), rate)
    return shift


# -- records ----------------------------------------------------------------------------------
def record_view(record: Any) -> dict[str, Any]:
    """What the paths must agree on: decisions, texts and scores (not probabilities, which
    only the choice path reads)."""
    return {"status": record.status, "eligible": record.eligible, "reason": record.eligibility_reason,
            "score": record.score, "parse_failures": record.parse_failures,
            "checks": [(c.type_id, c.detected, c.aspect, c.evidence, c.severity, c.severity_reason)
                       for c in record.checks]}


def positive_rate(records: Sequence[Any]) -> float:
    """The share of positive checks among the checks that were decided (NaN when none was)."""
    checks = [c for r in records for c in r.checks if c.detected is not None]
    return sum(bool(c.detected) for c in checks) / len(checks) if checks else float("nan")
