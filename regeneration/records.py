"""`ItemResult`, the per-reference record of a regeneration run: the chosen regeneration, its
scores and each round's progress, as `RegenerationLoop.run` returns it and the benchmark stores it.
It follows the shared record layout (`vlmjudge.record_schema`): id, status, score first.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass
class ItemResult:
    """The regeneration chosen for one reference, its scores, and the per-round progress.

    `id` is the reference's item id (its file stem, made folder-safe: the run folder's name for it);
    `score` is the chosen image's mean of CLIP % and DINO % (each clipped at 0), None when failed,
    `reason` then saying why.
    """

    id: str
    status: Literal["scored", "failed"]
    score: float | None = None
    prompt: str | None = None
    image: str | None = None
    round: int | None = None
    index: int | None = None
    clip: float | None = None
    dino: float | None = None
    combined: float | None = None
    mllm: dict[str, Any] | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)
    parse_failures: int = 0
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        """The record as a plain dict, in the shared layout."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ItemResult:
        """A record `to_json` wrote."""
        return cls(**data)
