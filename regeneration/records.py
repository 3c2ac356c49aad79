"""`ItemResult`, the per-reference record of a regeneration run: the chosen regeneration, its
scores and each round's progress, as `RegenerationLoop.run` returns it and the benchmark stores it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class ItemResult:
    """The regeneration chosen for one reference, its scores, and the per-round progress."""

    item: str
    status: str  # "ok" or "failed"
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
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ItemResult:
        return cls(**data)
