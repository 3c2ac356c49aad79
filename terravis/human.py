"""Scoring human annotations with the same rules, no model: TerraVis is model-agnostic, so
recorded eligibility and violations with severities give the same kind of record."""
from __future__ import annotations

from typing import Any, Iterable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .records import CheckRecord, ImageRecord
from .scoring import check_weights, score_from_counts
from .taxonomy import TAXONOMY, get_type

_BY_NAME = {t.name.lower(): t.id for t in TAXONOMY}


class Violation(BaseModel):
    """One annotated violation: its type (id or display name), severity, optional notes."""

    model_config = ConfigDict(extra="forbid")
    type: str
    severity: Literal["major", "minor"]
    aspect: str | None = None
    evidence: str | None = None

    @field_validator("type")
    @classmethod
    def _type_id(cls, value: str) -> str:
        key = value.strip()
        try:
            return get_type(_BY_NAME.get(key.lower(), key)).id
        except KeyError as exc:
            raise ValueError(str(exc.args[0])) from None

    @field_validator("severity", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class Annotation(BaseModel):
    """One image's annotation: eligible or N/A (with a reason), and its violations, each
    type at most once (a check reports its most salient instance)."""

    model_config = ConfigDict(extra="forbid")
    image_id: str = Field(min_length=1)
    eligible: bool
    eligibility_reason: str | None = None
    violations: list[Violation] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> "Annotation":
        types = [v.type for v in self.violations]
        dupes = sorted({t for t in types if types.count(t) > 1})
        if dupes:
            raise ValueError(f"image {self.image_id!r}: violation types listed more than once: {dupes}")
        if not self.eligible and self.violations:
            raise ValueError(f"image {self.image_id!r} is marked N/A but lists violations")
        return self


def score_annotation(annotation: Annotation | Mapping[str, Any], lam: float = 1.0,
                     alpha: float = 0.5) -> ImageRecord:
    """The record of one annotated image, scored with S = exp(-lam (N_major + alpha N_minor))."""
    check_weights(lam, alpha)
    ann = annotation if isinstance(annotation, Annotation) else Annotation.model_validate(annotation)
    record = ImageRecord(image_id=ann.image_id, variant="human", eligible=ann.eligible,
                         eligibility_reason=ann.eligibility_reason, lam=lam, alpha=alpha, meta=dict(ann.meta))
    if not ann.eligible:
        record.status = "not_applicable"
        return record
    found = {v.type: v for v in ann.violations}
    for vtype in TAXONOMY:
        v = found.get(vtype.id)
        record.checks.append(CheckRecord(vtype.id, detected=v is not None,
                                         aspect=v.aspect if v else None, evidence=v.evidence if v else None,
                                         severity=v.severity if v else None,
                                         severity_parse_ok=True if v else None))
    sev = [v.severity for v in ann.violations]
    record.n_major, record.n_minor = sev.count("major"), sev.count("minor")
    record.score = score_from_counts(record.n_major, record.n_minor, lam, alpha)
    return record


def score_annotations(annotations: Iterable[Annotation | Mapping[str, Any]], lam: float = 1.0,
                      alpha: float = 0.5) -> list[ImageRecord]:
    """Records for many annotated images (ids must be unique)."""
    records = [score_annotation(a, lam, alpha) for a in annotations]
    ids = [r.image_id for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError("annotations repeat image ids")
    return records
