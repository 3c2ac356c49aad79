"""Records from raw free-text answers: rescoring outputs saved by the TerraVis release, or by any judge
that wrote labelled answers (`Answer: Yes`, `Affected aspect: ...`, `Evidence: ...`, `Severity: Minor`).

The answers are read as the release reads them (`terravis.answers`), with its fallbacks: an unreadable
detection counts as not detected, an unreadable severity as minor, an unreadable eligibility as N/A
(the release asks up to three times before it stores the answer; a saved answer is final), and an
empty answer anywhere makes the image N/A (`status="failed"`), never "no violation".
"""
from __future__ import annotations

from typing import Sequence

from .answers import read_detection, read_eligibility, read_field, read_severity
from .records import CheckRecord, ImageRecord
from .scoring import check_weights, score_from_counts
from .taxonomy import TYPE_IDS
from .workflow import fail


def record_from_raw_answers(eligibility: str | None, detections: Sequence[str | None],
                            severities: Sequence[str | None] | None = None, *, image_id: str = "",
                            lam: float = 1.0, alpha: float = 0.5, keep_ineligible_details: bool = False,
                            type_ids: Sequence[str] | None = None) -> ImageRecord:
    """One image's record from its raw answers: the eligibility answer, one detection answer per
    question (taxonomy order, or `type_ids`), and the severity answers by question (read only where a
    violation was detected; None = not asked). None stands for a missing answer and reads as empty.

    The counts `n_major` / `n_minor` are those read even when the image ends up N/A (the release reports
    them too); `score` is set only for a scored image. `keep_ineligible_details` also reads the checks of
    an image that is not eligible, as the release's option of that name does.
    """
    check_weights(lam, alpha)
    type_ids = list(TYPE_IDS[:len(detections)] if type_ids is None else type_ids)
    if len(type_ids) != len(detections):
        raise ValueError(f"{len(detections)} detection answers for {len(type_ids)} question types")
    severities = list(severities or [])
    record = ImageRecord(id=image_id, variant="workflow", lam=lam, alpha=alpha)
    _read_eligibility(record, eligibility or "")
    if record.eligible is not True and not keep_ineligible_details:
        return record
    for index, (type_id, raw) in enumerate(zip(type_ids, detections)):
        check = CheckRecord(type_id)
        record.checks.append(check)
        _read_detection(record, check, raw or "")
        if check.detected:
            _read_severity(record, check, (severities[index] if index < len(severities) else None) or "")
    found = [c.severity for c in record.checks if c.detected]
    record.n_major, record.n_minor = found.count("major"), found.count("minor")
    if record.status == "scored" and record.eligible:
        record.score = score_from_counts(record.n_major, record.n_minor, lam, alpha)
    return record


def _read_eligibility(record: ImageRecord, raw: str) -> None:
    eligible = read_eligibility(raw)
    record.eligibility_reason = read_field(raw, "Reason") or None
    record.eligibility_parse_ok = eligible is not None
    if not raw:  # a failed request: eligibility unknown, the image N/A
        fail(record, "eligibility")
        return
    record.eligible = bool(eligible)  # unreadable: N/A, as the release does
    if eligible is None:
        record.parse_failures += 1
    if not record.eligible:
        record.status = "not_applicable"


def _read_detection(record: ImageRecord, check: CheckRecord, raw: str) -> None:
    detected = read_detection(raw)
    check.parse_ok = detected is not None
    check.detected = None if not raw else bool(detected)  # unreadable: not detected
    if detected is None and raw:
        record.parse_failures += 1
    check.aspect = read_field(raw, "Affected aspect") or None
    check.evidence = read_field(raw, "Evidence") or None
    if detected:
        check.evidence_parse_ok = check.aspect is not None and check.evidence is not None
    if not raw:
        fail(record, f"detection/{check.type_id}")


def _read_severity(record: ImageRecord, check: CheckRecord, raw: str) -> None:
    severity = read_severity(raw)
    check.severity = "major" if severity == "major" else "minor"
    check.severity_parse_ok = severity is not None
    check.severity_reason = read_field(raw, "Reason") or None
    if severity is None and raw:
        record.parse_failures += 1
    if not raw:
        fail(record, f"severity/{check.type_id}")
