"""`VIEScore2Record`, one judged image as the scorer returns it and as runs store it (JSON lines).

A record keeps what was asked for and read: the scores, the grids, the raw text, the finish
reason, a status and the requested fields that could not be read, and the explanation. Kept
apart from the scorer (`viescore2.core`) so that reading saved runs needs no judge code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from .grid import CategoryGrids, Grid, Localization
from .parsing import parse_grid
from .scoring import overall_score

#: The requested fields an overall score is made of: one of them unread is a failed record.
_SCORE_FIELDS = frozenset({"score", "pq", "sc"})

ReadStatus = Literal["ok", "partial", "failed", "error"]


@dataclass
class VIEScore2Record:
    """One judged image: the fields read from the judge's answer, how reading went, and an explanation.

    ``read_status`` is "ok" (every requested field read), "partial", "failed" (nothing read) or
    "error" (the judge gave no answer). ``missing`` names the requested fields not read
    ("score", "pq", "sc", "grid"); a grid cut off by the token limit counts as not read.
    ``status`` is the shared one (`vlmjudge.record_schema`): scored with an overall score,
    not_applicable when no score was asked for, else failed, ``error`` saying why.
    """

    id: str
    prompt: str
    fields: str
    grid_size: int
    text: str
    finish_reason: str
    read_status: ReadStatus
    scores: dict[str, float] = field(default_factory=dict)
    localization: Localization | None = None
    grid_status: str | None = None
    category_status: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    explanation: str = ""
    num_conditioning: int = 0
    num_tokens: int = 0
    image: Any = field(default=None, repr=False, compare=False)

    @property
    def overall(self) -> float | None:
        """The native overall score, else the geometric mean of PQ and SC, else None."""
        return overall_score(self.scores)

    @property
    def score(self) -> float | None:
        """The overall score on 0-10 (None when not requested or not read)."""
        return self.overall

    @property
    def status(self) -> str:
        """The shared status: scored, not_applicable (no score asked for) or failed (see `error`)."""
        if self.overall is not None:
            return "scored"
        if self.read_status == "error" or _SCORE_FIELDS & set(self.missing):
            return "failed"
        return "not_applicable"

    @property
    def error(self) -> str | None:
        """Why a failed record has no score (None unless failed)."""
        if self.status != "failed":
            return None
        if self.read_status == "error":
            return f"the judge gave no answer (finish reason {self.finish_reason})"
        return "not read from the answer: " + ", ".join(self.missing)

    @property
    def valid(self) -> bool:
        """True when the record has an overall score."""
        return self.overall is not None

    @property
    def parse_failures(self) -> int:
        """Requested fields that could not be read."""
        return len(self.missing)

    @property
    def grid(self) -> Grid | None:
        """The aggregate defect grid (union of categories), or None."""
        if self.localization is None:
            return None
        return self.localization.union() if isinstance(self.localization, CategoryGrids) else self.localization

    def grid_fields(self) -> dict[str, str | None]:
        """Grid bodies in the reference format: ``grid``, or ``artifact`` and ``misalign`` (None if absent)."""
        loc = self.localization
        return {"grid": loc.to_text() if isinstance(loc, Grid) else None,
                "artifact": loc.artifact.to_text() if isinstance(loc, CategoryGrids) else None,
                "misalign": loc.misalign.to_text() if isinstance(loc, CategoryGrids) else None}

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (the image is not included); `from_json` reads it back."""
        return {"id": self.id, "status": self.status, "score": self.overall, "error": self.error,
                "prompt": self.prompt, "fields": self.fields, "grid_size": self.grid_size,
                "read_status": self.read_status, "scores": dict(self.scores),
                **self.grid_fields(), "grid_status": self.grid_status,
                "category_status": dict(self.category_status), "missing": list(self.missing),
                "explanation": self.explanation, "text": self.text, "finish_reason": self.finish_reason,
                "num_tokens": self.num_tokens, "num_conditioning": self.num_conditioning}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "VIEScore2Record":
        """A record from `to_json` output (grids are read strictly)."""
        n = int(data["grid_size"])
        body = {k: data.get(k) for k in ("grid", "artifact", "misalign")}
        loc: Localization | None = None
        if body["grid"] is not None:
            loc = parse_grid(body["grid"], n, strict=True)[0]
        elif body["artifact"] is not None and body["misalign"] is not None:
            loc = CategoryGrids(parse_grid(body["artifact"], n, strict=True)[0],
                                parse_grid(body["misalign"], n, strict=True)[0])
        return cls(id=str(data["id"]), prompt=data["prompt"], fields=data["fields"], grid_size=n,
                   text=data["text"], finish_reason=data["finish_reason"], read_status=data["read_status"],
                   scores={k: float(v) for k, v in data["scores"].items()}, localization=loc,
                   grid_status=data.get("grid_status"), category_status=dict(data.get("category_status") or {}),
                   missing=list(data.get("missing") or []), explanation=data.get("explanation", ""),
                   num_conditioning=int(data.get("num_conditioning", 0)), num_tokens=int(data.get("num_tokens", 0)))
