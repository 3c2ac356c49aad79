"""The TerraVis workflow over a judge, stage-batched across images.

Eligibility for every image, then the 18 checks for the eligible ones, then evidence and
severity for the positive checks only, over blocks of images: each stage is one batched
judge call per block (requests of one image adjacent, so a backend reuses the image
prefix), and text is generated only where a decision calls for it. `reference_records` is
the slow path it must agree with: the full constrained answer of every question,
generated, one image at a time.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

from vlmjudge.images import digests_held
from vlmjudge.judge import Judge
from vlmjudge.requests import Answer, Decoding, Request

from . import asking
from .asking import Decision, DecisionMode
from .parsing import parse_evidence, parse_reason
from .pack import PromptPack
from .records import CheckRecord, ImageRecord
from .schema import full_answer_constraint
from .scoring import check_weights, score_from_counts
from .taxonomy import TAXONOMY

ReasonPolicy = Literal["na", "all", "none"]


@dataclass(frozen=True)
class WorkflowConfig:
    """How the workflow asks and scores: weights, decision mode, which reasons to generate,
    and how often an unreadable eligibility answer is asked again: by default twice, sampled at
    0.4 and then 0.6, so three attempts in all, as the public release asks."""

    lam: float = 1.0
    alpha: float = 0.5
    decision: DecisionMode = "choice"
    eligibility_reasons: ReasonPolicy = "na"
    severity_reasons: bool = False
    max_retries: int = 2
    retry_temperature: float | tuple[float, ...] = (0.4, 0.6)

    def __post_init__(self) -> None:
        check_weights(self.lam, self.alpha)
        if self.decision not in ("choice", "generate"):
            raise ValueError(f"decision must be 'choice' or 'generate', got {self.decision!r}")
        if self.eligibility_reasons not in ("na", "all", "none"):
            raise ValueError(f"eligibility_reasons must be 'na', 'all' or 'none', got {self.eligibility_reasons!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        single = isinstance(self.retry_temperature, (int, float)) and not isinstance(self.retry_temperature, bool)
        temps = (self.retry_temperature,) if single else tuple(self.retry_temperature) \
            if isinstance(self.retry_temperature, (list, tuple)) else ()
        if not temps or any(isinstance(t, bool) or not isinstance(t, (int, float)) or not t >= 0 for t in temps):
            raise ValueError(f"retry_temperature must be a temperature >= 0 or a non-empty sequence of them, "
                             f"got {self.retry_temperature!r}")
        if not single:
            object.__setattr__(self, "retry_temperature", tuple(float(t) for t in temps))


@dataclass
class Item:
    """One image to score, its id, and free metadata copied into its record."""

    image_id: str
    image: Any
    meta: dict[str, Any] = field(default_factory=dict)


# -- recording outcomes (shared by the workflow and the reference path) ------------------
#: Why a truncated decision fails its image: its unseen option is only bounded, so neither answer is known.
TRUNCATED = "an option was missing from the judge's top-k (truncated): failed, never a No"


def count_truncated(counts: Counter, decisions: Sequence[Decision]) -> None:
    """Count truncated decisions in the run's counts (the key appears only when one occurred)."""
    n = sum(d.truncated for d in decisions)
    if n:
        counts["truncated"] += n


def fail(record: ImageRecord, where: str, decision: Decision | None = None) -> None:
    """A failed or empty response, or a truncated decision: the image becomes N/A (failed),
    never "no violation"."""
    record.status = "failed"
    record.score = None
    why = TRUNCATED if decision is not None and decision.truncated else "failed or empty response"
    record.errors.append(f"{where}: {why}")


def note_mass(record: ImageRecord, decision: Decision, where: str) -> None:
    """Name a decision the judge mostly did not answer with an option in `record.low_mass`."""
    if decision.low_mass:
        record.low_mass.append(where)


def apply_eligibility(record: ImageRecord, decision: Decision, options: Sequence[str]) -> None:
    note_mass(record, decision, "eligibility")
    if decision.outcome == "failed":
        fail(record, "eligibility", decision)
    elif decision.outcome == "unparseable":  # after any retries: N/A, as the public release does
        record.status, record.eligible, record.eligibility_parse_ok = "not_applicable", False, False
        record.parse_failures += 1
    else:
        record.eligible = decision.option == options[0]
        record.eligibility_prob = decision.probs[options[0]] if decision.probs else None
        if not record.eligible:
            record.status = "not_applicable"


def apply_detection(record: ImageRecord, check: CheckRecord, decision: Decision, options: Sequence[str]) -> None:
    note_mass(record, decision, f"detection/{check.type_id}")
    if decision.outcome == "failed":
        fail(record, f"detection/{check.type_id}", decision)
    elif decision.outcome == "unparseable":
        check.detected, check.parse_ok = False, False
        record.parse_failures += 1
    else:
        check.detected = decision.option == options[0]
        check.prob = decision.probs[options[0]] if decision.probs else None


def apply_evidence(record: ImageRecord, check: CheckRecord, text: str | None) -> None:
    if text is None or not text.strip():
        fail(record, f"evidence/{check.type_id}")
        return
    parsed = parse_evidence(text)
    check.evidence_parse_ok = parsed is not None
    if parsed is None:
        record.parse_failures += 1
    else:
        check.aspect, check.evidence = parsed.aspect, parsed.evidence


def apply_severity(record: ImageRecord, check: CheckRecord, decision: Decision, options: Sequence[str]) -> None:
    note_mass(record, decision, f"severity/{check.type_id}")
    if decision.outcome == "failed":
        fail(record, f"severity/{check.type_id}", decision)
    elif decision.outcome == "unparseable":
        check.severity, check.severity_parse_ok = "minor", False
        record.parse_failures += 1
    else:
        check.severity = "major" if decision.option == options[0] else "minor"
        check.severity_parse_ok = True
        check.severity_prob = decision.probs[options[0]] if decision.probs else None


def apply_reason(record: ImageRecord, text: str | None, where: str) -> str | None:
    """The stated reason, or None (unreadable: counted; failed: the image fails)."""
    if text is None or not text.strip():
        fail(record, where)
        return None
    parsed = parse_reason(text)
    if parsed is None:
        record.parse_failures += 1
        return None
    return parsed.reason


def finish(record: ImageRecord, lam: float, alpha: float) -> ImageRecord:
    """Count the severities of an eligible, unfailed image and score it."""
    if record.status == "scored":
        sev = [c.severity for c in record.checks if c.detected]
        record.n_major, record.n_minor = sev.count("major"), sev.count("minor")
        record.score = score_from_counts(record.n_major, record.n_minor, lam, alpha)
    else:
        record.score = None
    return record


def wants_eligibility_reason(record: ImageRecord, policy: ReasonPolicy) -> bool:
    if record.status == "failed" or not record.eligibility_parse_ok or policy == "none":
        return False
    return policy == "all" or record.eligible is False


def _text(answer: Answer) -> str | None:
    return answer.text if answer.ok else None


# -- the stage-batched workflow -------------------------------------------------------------
#: Images taken through all stages together. A block is large enough for stage calls to batch
#: across images, and small enough that an image's later stages come while a backend still
#: holds its vision features (the transformers backend's default 2 GiB keeps ~64 images of
#: Qwen3-VL-8B at 1024^2), so each image is encoded once however many images a run has.
BLOCK_IMAGES = 32


class Workflow:
    """Runs the staged workflow for many images, a block of images at a time; `counts` holds
    the requests asked per stage (first attempts) and, separately, the retries."""

    def __init__(self, judge: Judge, pack: PromptPack, config: WorkflowConfig,
                 block_images: int = BLOCK_IMAGES) -> None:
        if block_images < 1:
            raise ValueError(f"block_images must be >= 1, got {block_images}")
        self.judge, self.pack, self.cfg = judge, pack, config
        self.block_images = block_images
        self.counts: Counter = Counter()

    def run(self, items: Sequence[Item]) -> list[ImageRecord]:
        records: list[ImageRecord] = []
        for start in range(0, len(items), self.block_images):
            records += self._run_block(items[start:start + self.block_images])
        return records

    def _run_block(self, items: Sequence[Item]) -> list[ImageRecord]:
        """Every stage over one block; each image hashed once for all its stages' request keys."""
        records = [ImageRecord(id=it.image_id, variant="workflow", lam=self.cfg.lam, alpha=self.cfg.alpha,
                               meta=dict(it.meta)) for it in items]
        with digests_held():
            self._eligibility(items, records)
            positives = self._detection(items, records)
            self._evidence(records, positives)
            self._severity(items, records, positives)
        return [finish(r, self.cfg.lam, self.cfg.alpha) for r in records]

    def _decide(self, base: list[Request], options: Sequence[str], stage: str,
                records: list[ImageRecord] | None = None) -> tuple[list[Decision], list[Request]]:
        """Decide every request; given `records`, ask unreadable ones again, up to
        `max_retries` times (each retry counted apart, and in the record)."""
        asked = [asking.as_decision_request(r, self.pack, self.cfg.decision, options) for r in base]
        if asked:
            self.counts[stage] += len(asked)
        decisions = asking.decide(self.judge, asked, options, self.cfg.decision)
        count_truncated(self.counts, decisions)
        for attempt in range(1, self.cfg.max_retries + 1 if records is not None else 1):
            todo = [i for i, d in enumerate(decisions) if d.outcome == "unparseable"]
            if not todo:
                break
            for i in todo:
                records[i].retries += 1
                records[i].parse_failures += 1  # the answer being retried
            again = [asking.as_decision_request(base[i], self.pack, self.cfg.decision, options, attempt,
                                                self.cfg.retry_temperature) for i in todo]
            self.counts["retries"] += len(again)
            for i, d in zip(todo, asking.decide(self.judge, again, options, self.cfg.decision)):
                decisions[i] = d
        return decisions, asked

    def _decide_by_type(self, base: list[Request], options: Sequence[str],
                        stage: str) -> tuple[list[Decision], list[Request]]:
        """`_decide` once per check type (see `_by_type`), results in the order of `base`."""
        pairs = self._by_type(base, lambda group: list(zip(*self._decide(group, options, stage))))
        return [d for d, _ in pairs], [r for _, r in pairs]

    def _by_type(self, requests: list[Request], run: Any) -> list:
        """`run` on the requests of each check type apart, results in the order of `requests`.

        Text-only requests (severity without the image) share no image prefix; what the requests
        of one type share is the system prompt and the type's own text (its name, checks and
        question, several hundred tokens), and a backend shares one prefix per call and images.
        One call per type lets it run that text once per type rather than once per request.
        Requests that show an image keep one call: there they share the image prefix."""
        if any(r.images for r in requests):
            return run(requests)
        groups: dict[str, list[int]] = {}
        for k, r in enumerate(requests):
            groups.setdefault(r.meta["check"], []).append(k)
        out: list = [None] * len(requests)
        for rows in groups.values():
            for k, result in zip(rows, run([requests[k] for k in rows])):
                out[k] = result
        return out

    def _eligibility(self, items: Sequence[Item], records: list[ImageRecord]) -> None:
        opts = self.pack.options.eligibility
        base = [asking.eligibility_request(self.pack, it.image, it.image_id) for it in items]
        decisions, asked = self._decide(base, opts, "eligibility", records)
        for record, d in zip(records, decisions):
            apply_eligibility(record, d, opts)
        todo = [i for i, r in enumerate(records) if wants_eligibility_reason(r, self.cfg.eligibility_reasons)]
        requests = [asking.continuation_request(self.pack, asked[i], opts[0] if records[i].eligible else opts[1],
                                                "eligibility") for i in todo]
        for i, answer in zip(todo, self._generate(requests, "eligibility_reason")):
            records[i].eligibility_reason = apply_reason(records[i], _text(answer), "eligibility_reason")

    def _detection(self, items: Sequence[Item], records: list[ImageRecord]) -> list[tuple[int, CheckRecord, Request]]:
        opts = self.pack.options.detection
        slots: list[tuple[int, CheckRecord]] = []
        base: list[Request] = []
        for i, (it, record) in enumerate(zip(items, records)):
            if record.status != "scored":
                continue
            for vtype in TAXONOMY:  # one image's 18 questions adjacent: shared image prefix
                check = CheckRecord(vtype.id)
                record.checks.append(check)
                slots.append((i, check))
                base.append(asking.detection_request(self.pack, it.image, it.image_id, vtype))
        decisions, asked = self._decide(base, opts, "detection")
        for (i, check), d in zip(slots, decisions):
            apply_detection(records[i], check, d, opts)
        return [(i, check, req) for (i, check), req in zip(slots, asked) if check.detected]

    def _evidence(self, records: list[ImageRecord], positives: list[tuple[int, CheckRecord, Request]]) -> None:
        opts = self.pack.options.detection
        live = [(i, c, r) for i, c, r in positives if records[i].status == "scored"]
        requests = [asking.continuation_request(self.pack, r, opts[0], "detection") for _, _, r in live]
        for (i, check, _), answer in zip(live, self._generate(requests, "evidence")):
            apply_evidence(records[i], check, _text(answer))

    def _severity(self, items: Sequence[Item], records: list[ImageRecord],
                  positives: list[tuple[int, CheckRecord, Request]]) -> None:
        opts = self.pack.options.severity
        live = [(i, c) for i, c, _ in positives if records[i].status == "scored"]
        base = [asking.severity_request(self.pack, items[i].image, items[i].image_id, c.type_id, c.aspect, c.evidence)
                for i, c in live]
        decisions, asked = self._decide_by_type(base, opts, "severity")
        for (i, check), d in zip(live, decisions):
            apply_severity(records[i], check, d, opts)
        if not self.cfg.severity_reasons:
            return
        todo = [(k, i, c) for k, (i, c) in enumerate(live) if records[i].status == "scored" and c.severity_parse_ok]
        requests = [asking.continuation_request(self.pack, asked[k], opts[0] if c.severity == "major" else opts[1],
                                                "severity") for k, _, c in todo]
        for (_, i, check), answer in zip(todo, self._by_type(requests, lambda rs: self._generate(rs, "severity_reason"))):
            check.severity_reason = apply_reason(records[i], _text(answer), f"severity_reason/{check.type_id}")

    def _generate(self, requests: list[Request], stage: str) -> list[Answer]:
        if not requests:
            return []
        self.counts[stage] += len(requests)
        return self.judge.generate(requests)


# -- the reference path ---------------------------------------------------------------------
def reference_records(judge: Judge, items: Sequence[Item], pack: PromptPack,
                      config: WorkflowConfig | None = None) -> list[ImageRecord]:
    """Records from generating the full constrained answer of every question (option word,
    then its JSON), greedy: per image, eligibility, then its 18 questions in one batch, then
    the severities of its positives. No probabilities and no early exit: what the staged
    workflow must reproduce, and the baseline it is benchmarked against."""
    cfg = config or WorkflowConfig(decision="generate")
    out = []
    for it in items:
        record = ImageRecord(id=it.image_id, variant="workflow", lam=cfg.lam, alpha=cfg.alpha,
                             meta=dict(it.meta))
        _reference_image(judge, pack, cfg, it, record)
        out.append(finish(record, cfg.lam, cfg.alpha))
    return out


def full_answer_request(pack: PromptPack, base: Request, options: Sequence[str],
                        text_after: Sequence[str]) -> Request:
    """A stage's whole answer in one greedy generation: the option word (first token
    restricted to the options), then the JSON object after the options in `text_after`."""
    stage = base.meta["stage"]
    budget = 1 + (asking.continuation_budget(pack, stage) if text_after else 0)
    return Request(images=list(base.images), text=base.text, system=base.system, prefix=base.prefix,
                   constraint=full_answer_constraint(pack, stage, options, text_after),
                   decoding=Decoding(max_new_tokens=budget), meta=dict(base.meta))


def _reason_after(options: Sequence[str], policy: ReasonPolicy) -> list[str]:
    """The eligibility options a reason follows under a reason policy."""
    return {"na": [options[1]], "all": list(options), "none": []}[policy]


def _reference_image(judge: Judge, pack: PromptPack, cfg: WorkflowConfig, it: Item, record: ImageRecord) -> None:
    opts = pack.options
    base = asking.eligibility_request(pack, it.image, it.image_id)
    request = full_answer_request(pack, base, opts.eligibility,
                                  _reason_after(opts.eligibility, cfg.eligibility_reasons))
    text = _text(judge.generate([request])[0])
    apply_eligibility(record, asking.read_option(text, opts.eligibility, pack.answer_prefix, "eligibility"),
                      opts.eligibility)
    if wants_eligibility_reason(record, cfg.eligibility_reasons):
        record.eligibility_reason = apply_reason(record, text, "eligibility_reason")
    if record.status != "scored":
        return
    requests = [full_answer_request(pack, asking.detection_request(pack, it.image, it.image_id, t), opts.detection,
                                    [opts.detection[0]]) for t in TAXONOMY]
    texts = [_text(a) for a in judge.generate(requests)]
    positives = []
    for vtype, text in zip(TAXONOMY, texts):
        check = CheckRecord(vtype.id)
        record.checks.append(check)
        apply_detection(record, check, asking.read_option(text, opts.detection, pack.answer_prefix, "detection"),
                         opts.detection)
        if check.detected:
            positives.append((check, text))
    if record.status != "scored":
        return
    for check, text in positives:
        apply_evidence(record, check, text)
    if record.status != "scored" or not positives:
        return
    after = list(opts.severity) if cfg.severity_reasons else []
    requests = [full_answer_request(pack, asking.severity_request(pack, it.image, it.image_id, c.type_id, c.aspect,
                                                                  c.evidence), opts.severity, after)
                for c, _ in positives]
    for (check, _), answer in zip(positives, judge.generate(requests)):
        text = _text(answer)
        apply_severity(record, check, asking.read_option(text, opts.severity, pack.answer_prefix, "severity"),
                       opts.severity)
        if cfg.severity_reasons and record.status == "scored" and check.severity_parse_ok:
            check.severity_reason = apply_reason(record, text, f"severity_reason/{check.type_id}")
