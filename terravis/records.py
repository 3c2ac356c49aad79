"""One JSON-serialisable record per image, and a run's manifest, saved as JSON lines.

A record keeps every decision that led to its score (eligibility and its reason; for each
of the 18 checks the decision, its probability, aspect, evidence, severity, and whether
each answer parsed), so analyses can re-score saved runs without asking a judge again.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Literal

from .scoring import score_from_counts
from .taxonomy import get_type

Status = Literal["scored", "not_applicable", "failed"]
Variant = Literal["workflow", "holistic", "gptscore", "human", "reference"]


def _known_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The values in `data` of the dataclass `cls`'s fields (saved keys it does not declare,
    such as the derived `level` or `valid`, are left out)."""
    return {f.name: data[f.name] for f in fields(cls) if f.name in data}


def _without_probs(out: dict[str, Any], probs: bool, *keys: str) -> dict[str, Any]:
    """`out` as is, or without the probability `keys` when `probs` is False."""
    if not probs:
        for key in keys:
            out.pop(key)
    return out


@dataclass
class CheckRecord:
    """The outcome of one violation check on one image.

    `detected` is None when the judge failed to answer; `parse_ok` is False when its answer
    could not be read (then the check counts as not detected). Severity fields are set only
    for detected violations; an unreadable severity counts as minor.

    Examples:
        >>> check = CheckRecord("support_stability", detected=True, evidence="It hovers.", severity="major")
        >>> check.level, check.name, CheckRecord.from_json(check.to_json()) == check
        ('interaction', 'Support and stability', True)
    """

    type_id: str
    detected: bool | None = None
    prob: float | None = None
    parse_ok: bool = True
    aspect: str | None = None
    evidence: str | None = None
    evidence_parse_ok: bool | None = None
    severity: Literal["major", "minor"] | None = None
    severity_prob: float | None = None
    severity_parse_ok: bool | None = None
    severity_reason: str | None = None

    @property
    def level(self) -> str:
        return get_type(self.type_id).level

    @property
    def name(self) -> str:
        return get_type(self.type_id).name

    def to_json(self, probs: bool = True) -> dict[str, Any]:
        out = {"type_id": self.type_id, "level": self.level, "name": self.name, **asdict(self)}
        return _without_probs(out, probs, "prob", "severity_prob")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CheckRecord":
        return cls(**_known_fields(cls, data))


@dataclass
class ImageRecord:
    """Everything TerraVis decided about one image, and its score (None unless scored).

    `id` is the image's path relative to the input root, or the id given (the shared schema,
    `vlmjudge.record_schema`).
    `status` is "scored", "not_applicable" (judged ineligible, or eligibility unreadable
    after retries) or "failed" (a judge response was empty or failed: the image is N/A,
    never "no violation"). `rating` is the 1-5 rating of the holistic and GPTScore variants.

    Examples:
        A saved record re-scores with other weights or checks, with no judge:

        >>> checks = [CheckRecord("support_stability", detected=True, severity="major"),
        ...           CheckRecord("optical_effect", detected=True, severity="minor")]
        >>> record = ImageRecord("cup.png", score=0.2231, eligible=True, checks=checks, n_major=1, n_minor=1)
        >>> record.valid, record.has_violation, record.detected_types()
        (True, True, ['support_stability', 'optical_effect'])
        >>> round(record.rescore(alpha=0.0), 4), round(record.rescore(drop=["support_stability"]), 4)
        (0.3679, 0.6065)
        >>> ImageRecord("logo.png", status="not_applicable").has_violation is None
        True
    """

    id: str
    variant: Variant = "workflow"
    status: Status = "scored"
    score: float | None = None
    eligible: bool | None = None
    eligibility_prob: float | None = None
    eligibility_reason: str | None = None
    eligibility_parse_ok: bool = True
    checks: list[CheckRecord] = field(default_factory=list)
    n_major: int = 0
    n_minor: int = 0
    rating: int | None = None
    rating_probs: dict[str, float] | None = None
    #: decisions (eligibility, detection/<type>, ...) whose options held less than
    #: `vlmjudge.options.MIN_OPTION_MASS` of the judge's probability: it was not answering the question
    low_mass: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    parse_failures: int = 0
    retries: int = 0
    lam: float = 1.0
    alpha: float = 0.5
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        """True when the image got a score: scored, not N/A and not failed."""
        return self.score is not None

    @property
    def has_violation(self) -> bool | None:
        """Image-level detection: any violation found (workflow, human) or a rating below 5
        (holistic, GPTScore); None when the image has no score."""
        if self.score is None:
            return None
        if self.rating is not None:
            return self.rating < 5
        return self.n_major + self.n_minor > 0

    def detected_types(self) -> list[str]:
        return [c.type_id for c in self.checks if c.detected]

    def rescore(self, lam: float = 1.0, alpha: float = 0.5, only: Iterable[str] | None = None,
                drop: Iterable[str] = ()) -> float | None:
        """The score with other weights or a subset of the checks (analyses of saved runs);
        None when the image has no score."""
        if self.score is None:
            return None
        if self.rating is not None:
            raise ValueError(f"record {self.id!r} is a {self.variant} rating; it has no checks to re-score")
        keep = set(only) if only is not None else None
        dropped = set(drop)
        sev = [c.severity for c in self.checks if c.detected and c.type_id not in dropped
               and (keep is None or c.type_id in keep)]
        return score_from_counts(sev.count("major"), sev.count("minor"), lam, alpha)

    def to_json(self, probs: bool = True) -> dict[str, Any]:
        """A plain dict (json.dumps-able); `probs=False` leaves out the probabilities (and the
        decisions flagged by theirs), which a generation-only run does not have."""
        out = asdict(self)
        out = {"id": out.pop("id"), "status": out.pop("status"), "score": out.pop("score"), **out}
        out["checks"] = [c.to_json(probs) for c in self.checks]
        out["valid"] = self.valid
        return _without_probs(out, probs, "eligibility_prob", "rating_probs", "low_mass")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ImageRecord":
        kwargs = {**_known_fields(cls, data), "id": str(data["id"])}
        kwargs["checks"] = [CheckRecord.from_json(c) for c in data.get("checks", [])]
        return cls(**kwargs)


def save_records(path: str | os.PathLike, records: Iterable[ImageRecord],
                 manifest: dict[str, Any] | None = None) -> None:
    """Write a run as JSON lines, one record a line, and its manifest beside them
    (`results.jsonl` -> `results.manifest.json`, the layout of `vlmjudge.outputs`).

    Examples:
        The manifest goes beside the records:

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "results.jsonl")
        >>> save_records(path, [ImageRecord("cup.png", score=1.0, eligible=True)], manifest={"method": "terravis"})
        >>> sorted(os.listdir(os.path.dirname(path)))
        ['results.jsonl', 'results.manifest.json']
    """
    from vlmjudge.outputs import manifest_path, write_manifest, write_records

    write_records(path, (record.to_json() for record in records))
    if manifest is not None:
        write_manifest(path, manifest)
    else:  # a manifest left by an earlier run would describe other records
        manifest_path(path).unlink(missing_ok=True)


def load_records(path: str | os.PathLike) -> tuple[list[ImageRecord], dict[str, Any] | None]:
    """Read a run: its records and its manifest (beside them, or the first line of an older
    file; None if absent). A line that is not a TerraVis record is a ValueError naming it.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "results.jsonl")
        >>> save_records(path, [ImageRecord("cup.png", score=1.0, eligible=True)], manifest={"method": "terravis"})
        >>> records, manifest = load_records(path)
        >>> [(r.id, r.score) for r in records], manifest["method"]
        ([('cup.png', 1.0)], 'terravis')
    """
    from vlmjudge.outputs import iter_jsonl, is_manifest_line, read_manifest

    records = []
    for lineno, row in iter_jsonl(path):
        if is_manifest_line(row):
            continue
        if "id" not in row or "checks" not in row:
            raise ValueError(f"{path}:{lineno}: neither a manifest nor a TerraVis record")
        records.append(ImageRecord.from_json(row))
    return records, read_manifest(path)


def image_meta(path: str | os.PathLike, t2i_model: str | None = None,
               resolution_note: str | None = None) -> dict[str, Any]:
    """The `meta` of a scored image file's record: its absolute path (the report's thumbnails and
    style split read it), the T2I model that made it, and a low-resolution note where it has one.

    Examples:
        >>> meta = image_meta("cup.png", "sdxl")
        >>> os.path.isabs(meta["path"]), meta["model"], "resolution_note" in meta
        (True, 'sdxl', False)
    """
    meta: dict[str, Any] = {"path": str(Path(path).resolve())}
    if t2i_model is not None:
        meta["model"] = t2i_model
    if resolution_note is not None:
        meta["resolution_note"] = resolution_note
    return meta
