"""The requests of each TerraVis stage, and how their answers are read.

Every decision is the first answer token after the pack's fixed assistant prefix, over
single-token options: read from `choice_probs` (mode "choice") or generated under a
constraint whose first position is restricted to the options (mode "generate"). Generated
decisions (and replayed or unconstrained answers) are read after the prefix's label as the
public release reads labelled answers (`terravis.answers`). Free text
(evidence, reasons) is generated, JSON-constrained with bounded strings, as the
continuation of the prefix plus the chosen option, so it equals what greedy generation of
the whole answer would have written after that option.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

from vlmjudge.judge import Judge
from vlmjudge.options import MIN_OPTION_MASS, as_option_probs
from vlmjudge.requests import Constraint, Decoding, Request

from . import answers
from .pack import PromptPack
from .parsing import leading_option
from .schema import continuation_schema, decision_constraint
from .taxonomy import ViolationType

DecisionMode = Literal["choice", "generate"]
Outcome = Literal["ok", "unparseable", "failed"]
#: The labels a stage's decision is read after, besides the label of the pack's answer prefix.
STAGE_LABELS = {"eligibility": ("Answer",), "detection": ("Answer",), "severity": ("Severity",)}
_STAGE_WORDS = {"eligibility": answers.ELIGIBILITY_WORDS, "detection": answers.DETECTION_WORDS,
                "severity": answers.SEVERITY_WORDS}
_POSITIVE = (True, "major")
#: The meta stage of the text generated after each decision stage's option.
TEXT_STAGES = {"eligibility": "eligibility_reason", "detection": "evidence", "severity": "severity_reason"}


@dataclass
class Decision:
    """One read decision: the chosen option (None unless ok) and, from choice_probs, the
    probability of every option, the options' total `mass` (None where unmeasured) and whether
    an option was `truncated` (a server's top-k lacked it: the decision failed, never a No)."""

    outcome: Outcome
    option: str | None = None
    probs: dict[str, float] | None = None
    mass: float | None = None
    truncated: bool = False

    @property
    def low_mass(self) -> bool:
        """The judge mostly answered with no option (`vlmjudge.options.MIN_OPTION_MASS`)."""
        return self.mass is not None and self.mass < MIN_OPTION_MASS

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


def meta(image_id: str, stage: str, check: str = "", attempt: int = 0) -> dict[str, Any]:
    """The meta of every TerraVis request: replay keys and per-stage counting use it."""
    return {"item": image_id, "stage": stage, "check": check, "attempt": attempt}


# -- request texts ------------------------------------------------------------------------
def eligibility_request(pack: PromptPack, image: Any, image_id: str, **kw: Any) -> Request:
    return _image_request(pack, image, pack.eligibility, image_id, "eligibility", **kw)


def detection_request(pack: PromptPack, image: Any, image_id: str, vtype: ViolationType, **kw: Any) -> Request:
    return _image_request(pack, image, pack.detection_text(vtype), image_id, "detection", check=vtype.id, **kw)


def severity_request(pack: PromptPack, image: Any, image_id: str, type_id: str, aspect: str | None,
                     evidence: str | None, **kw: Any) -> Request:
    text = pack.severity_text(type_id, aspect, evidence)
    if pack.severity_sees_image:
        return _image_request(pack, image, text, image_id, "severity", check=type_id, **kw)
    return _request(pack, [], text, image_id, "severity", check=type_id, **kw)


def holistic_request(pack: PromptPack, image: Any, image_id: str, **kw: Any) -> Request:
    return _image_request(pack, image, pack.holistic_text(), image_id, "holistic", **kw)


def gptscore_request(pack: PromptPack, image: Any, image_id: str, **kw: Any) -> Request:
    # The baseline is the paper's generic question alone: no system prompt, no taxonomy.
    return _request(pack, [image], pack.gptscore, image_id, "gptscore", system=None, **kw)


def _image_request(pack: PromptPack, image: Any, text: str, image_id: str, stage: str, **kw: Any) -> Request:
    return _request(pack, [image], text, image_id, stage, **kw)


def _request(pack: PromptPack, images: list, text: str, image_id: str, stage: str, *, check: str = "",
             attempt: int = 0, system: str | None | Literal[False] = False, prefix: str | None = None,
             constraint: Constraint | None = None, decoding: Decoding | None = None) -> Request:
    return Request(images=images, text=text, system=pack.system if system is False else system,
                   prefix=pack.answer_prefix if prefix is None else prefix, constraint=constraint,
                   decoding=decoding or Decoding(max_new_tokens=1), meta=meta(image_id, stage, check, attempt))


def continuation_budget(pack: PromptPack, stage: str) -> int:
    return pack.max_new_tokens["evidence" if stage == "detection" else "reason"]


def continuation_request(pack: PromptPack, decided: Request, option: str, stage: str) -> Request:
    """The request that writes the JSON after a chosen option: the same question, with the
    option appended to the assistant prefix."""
    return Request(images=list(decided.images), text=decided.text, system=decided.system,
                   prefix=decided.prefix + option,
                   constraint=Constraint.json_schema(continuation_schema(pack, stage)),
                   decoding=Decoding(max_new_tokens=continuation_budget(pack, stage)),
                   meta=meta(decided.meta["item"], TEXT_STAGES[stage], decided.meta["check"], 0))


def retry_temperature_at(temperatures: float | Sequence[float], attempt: int) -> float:
    """The sampling temperature of retry `attempt` (1, 2, ...): a single value for every retry, or
    one per retry with the last repeated (the release's eligibility retries use 0.4, then 0.6)."""
    if isinstance(temperatures, (int, float)):
        return float(temperatures)
    return float(temperatures[min(attempt, len(temperatures)) - 1])


def as_decision_request(request: Request, pack: PromptPack, mode: DecisionMode, options: Sequence[str],
                        attempt: int = 0, retry_temperature: float | Sequence[float] = (0.4, 0.6)) -> Request:
    """The request in the form the mode asks it; a retry samples (a new seed per attempt),
    since repeating a greedy request can only repeat its answer."""
    decoding = Decoding(max_new_tokens=1) if attempt == 0 else \
        Decoding(max_new_tokens=1, temperature=retry_temperature_at(retry_temperature, attempt), seed=attempt)
    constraint = decision_constraint(options) if mode == "generate" else None
    return Request(images=list(request.images), text=request.text, system=request.system, prefix=request.prefix,
                   constraint=constraint, decoding=decoding,
                   meta=meta(request.meta["item"], request.meta["stage"], request.meta["check"], attempt))


# -- reading answers ----------------------------------------------------------------------
def decide(judge: Judge, requests: Sequence[Request], options: Sequence[str], mode: DecisionMode) -> list[Decision]:
    """Decisions for many requests in one batched judge call."""
    if not requests:
        return []
    if mode == "choice":
        return [_from_probs(p, options) for p in judge.choice_probs(list(requests), list(options))]
    if mode == "generate":
        return [read_option(a.text if a.ok else None, options, prefix=r.prefix or "", stage=r.meta.get("stage"))
                for r, a in zip(requests, judge.generate(list(requests)))]
    raise ValueError(f"decision mode must be 'choice' or 'generate', got {mode!r}")


def read_option(text: str | None, options: Sequence[str], prefix: str = "", stage: str | None = None) -> Decision:
    """A generated answer as a decision: failed when missing or empty (a failed request),
    unparseable when no option can be read.

    For the eligibility, detection and severity stages, `prefix + text` is read as the release
    reads a labelled answer (`labelled_option`); other stages (the 1-5 ratings), and a prefix
    without a label, read the option word the text starts with (`leading_option`)."""
    if text is None or text == "":
        return Decision("failed")
    label = answers.prefix_label(prefix)
    if stage in _STAGE_WORDS and label:
        option = labelled_option(prefix + text, options, stage, label)
    else:
        option = leading_option(text, options)
    return Decision("ok", option) if option is not None else Decision("unparseable")


def labelled_option(text: str, options: Sequence[str], stage: str, label: str = "Answer") -> str | None:
    """The option a labelled answer gives (`Answer: Yes`, `Severity: minor`), or None.

    Labels: the stage's (`STAGE_LABELS`), then `label` (the pack prefix's). Words: the pack's
    option words (the first option is the positive one), then the release's for the stage
    (e.g. "eligible", "n/a" for eligibility; "none", "nope" as No) other than the pack's. Echoes ("Yes or No") and
    values without a label are not read."""
    if stage not in _STAGE_WORDS:
        raise ValueError(f"stage {stage!r} has no labelled answer; expected one of {sorted(_STAGE_WORDS)}")
    positive, negative = options
    own = {positive.lower(), negative.lower()}
    vocabulary = [((positive,), positive), ((negative,), negative)]
    vocabulary += [(tuple(w for w in words if w not in own), positive if meaning in _POSITIVE else negative)
                   for words, meaning in _STAGE_WORDS[stage]]  # a pack's own words win over the release's
    labels = list(dict.fromkeys((*STAGE_LABELS[stage], label)))
    return answers.read_choice(text, labels, vocabulary)


def _from_probs(probs: dict[str, float], options: Sequence[str]) -> Decision:
    """A choice decision; a truncated one fails (its unseen option holds only a bound)."""
    if not probs:
        return Decision("failed")
    probs = as_option_probs(probs)
    values = {o: float(probs.get(o, 0.0)) for o in options}
    if probs.truncated:
        return Decision("failed", None, values, probs.mass, truncated=True)
    best = max(options, key=lambda o: probs.get(o, 0.0))  # ties go to the earlier option
    return Decision("ok", best, values, probs.mass)
