"""Scoring human annotations with the same rules, no model: TerraVis is model-agnostic, so
recorded eligibility and violations with severities give the same kind of record. `PROTOCOL`
reads the annotation app's labels (`eligible`, `violations`, `rating`) for `vlmjudge agreement`:
the paper correlates the score with people's 1-5 ratings, N/A left out, and compares detection
per image and per violation type."""
from __future__ import annotations

from typing import Any, Iterable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from vlmjudge.stats.human_sets.protocol import HumanProtocol, confusion_table, majority, number, share

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
    record = ImageRecord(id=ann.image_id, variant="human", eligible=ann.eligible,
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
    ids = [r.id for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError("annotations repeat image ids")
    return records


def label_annotation(label: Mapping[str, Any]) -> Annotation:
    """One annotator's label line as an Annotation: `violations` as a list of {type, severity}
    or as a mapping type -> severity; `eligible` defaults to true."""
    violations = label.get("violations") or []
    if isinstance(violations, Mapping):
        violations = [{"type": name, "severity": severity} for name, severity in violations.items()]
    try:
        return Annotation.model_validate({"image_id": str(label["id"]), "eligible": label.get("eligible", True),
                                          "violations": violations})
    except ValidationError as error:  # one line per problem, without pydantic's help links
        raise ValueError("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())) from None


def rate_label(label: Mapping[str, Any]) -> float | None:
    """An annotator's number: the 1-5 `rating` when given, else the TerraVis score of the marked
    violations; None for an image marked N/A. Give ratings for all labels or for none."""
    annotation = label_annotation(label)
    if not annotation.eligible:
        return None
    if label.get("rating") is not None:
        rating = number(label["rating"])
        if rating is None or not 1 <= rating <= 5:
            raise ValueError(f"rating must be a number from 1 to 5, got {label['rating']!r}")
        return rating
    return score_annotation(annotation).score


def _human_flags(labels: list[Mapping[str, Any]]) -> tuple[bool, set[str]] | None:
    """People's majority on one image: has a violation, and which types; None when all said N/A or
    no one marked violations (a rating alone says how good, not which violation: no detection)."""
    marked = []
    for label in labels:
        annotation = label_annotation(label)
        if annotation.eligible and ("violations" in label or label.get("rating") is None):
            marked.append((bool(annotation.violations), {v.type for v in annotation.violations}))
    if not marked:
        return None
    types = {t.id for t in TAXONOMY if majority([t.id in found for _, found in marked])}
    return majority([has for has, _ in marked]), types


def compare_details(rows, records) -> dict[str, Any]:
    """Detection as the paper checks it: the judge's "has a violation" against people's majority,
    and per violation type whether both, one or neither marked it (workflow records only); images
    whose labels mark no violations (ratings only) are left out, and with none left there is no
    detection table or measure at all."""
    judged, people, per_type = [], [], {t.id: [0, 0, 0, 0] for t in TAXONOMY}
    with_checks = 0
    for row in rows:
        record = ImageRecord.from_json(dict(records[row["id"]]))
        flags = _human_flags(row["labels"])
        if flags is None or record.has_violation is None:
            continue
        judged.append("violation" if record.has_violation else "clean")
        people.append("violation" if flags[0] else "clean")
        if record.checks:
            with_checks += 1
            found = set(record.detected_types())
            for type_id, counts in per_type.items():
                counts[(type_id not in found) * 2 + (type_id not in flags[1])] += 1
    if not judged:  # rating-only labels: no violation-detection measure, absent rather than 0
        return {"tables": [], "measures": {}}
    tables = [confusion_table("Has a violation (image level)", judged, people, ("violation", "clean"))]
    tp = sum(j == h == "violation" for j, h in zip(judged, people))
    measures = {"detection_precision": share(tp, judged.count("violation")),
                "detection_recall": share(tp, people.count("violation")),
                "detection_agreement": share(sum(j == h for j, h in zip(judged, people)), len(judged))}
    if with_checks:
        tables.append({"title": "Per violation type (images)",
                       "header": ["type", "both", "judge only", "people only", "neither", "agreement"],
                       "rows": [[get_type(t).name, *c, share(c[0] + c[3], sum(c))] for t, c in per_type.items()]})
    return {"tables": tables, "measures": measures}


def record_id(record: Mapping[str, Any]) -> str | None:
    """A TerraVis record names its image by `id` (the shared record layout)."""
    return record.get("id")


#: How TerraVis's human labels are read and matched to its records (`MethodSpec.human`).
PROTOCOL = HumanProtocol(rate=rate_label, record_id=record_id,
                         details=compare_details, human_axis="people's rating (1-5) or score",
                         judge_axis="TerraVis score (0-1)")
