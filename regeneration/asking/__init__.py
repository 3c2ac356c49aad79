"""What Image Regeneration asks a judge: constrained-JSON requests with uniform metadata, run one
stage at a time. The stages live beside this file: `iut` (the Image Understanding Tree, then the
initial prompt) and `judging` (1-5 ratings); the loop's own stages (prompt variants, feedback,
revision) are asked from `regeneration.core` through the same two functions.

Every request carries `meta` with the same four keys (stage, item, round, index), so a
replay judge can key recorded answers on them and logs can be grouped by stage.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from vlmjudge.requests import Constraint, Decoding, Request

from ..parsing import ParseFailure, parse_answer, token_budget

M = TypeVar("M", bound=BaseModel)

#: The meta keys of every request this package sends (ReplayJudge `key_fields`).
META_KEYS = ("stage", "item", "round", "index")


def json_request(*, stage: str, item: str, text: str, schema: dict | type[BaseModel], images: Sequence[Any] = (),
                 system: str | None = None, round: int = 0, index: int = 0,
                 max_new_tokens: int | None = None) -> Request:
    """A request whose answer is constrained to `schema`, with a budget in which any valid answer fits."""
    constraint = Constraint.json_schema(schema)
    budget = max_new_tokens if max_new_tokens is not None else token_budget(constraint.schema)
    return Request(images=list(images), text=text, system=system or None, constraint=constraint,
                   decoding=Decoding(max_new_tokens=budget),
                   meta={"stage": stage, "item": str(item), "round": int(round), "index": int(index)})


def run_stage(judge: Any, requests: Sequence[Request], model: type[M] | Sequence[type[M]], *,
              reading: str = "release") -> list[M | ParseFailure]:
    """All requests of a stage in one batched `generate` call, each answer read as `reading` says
    (`parsing.READINGS`) and validated against `model` (one model for all, or one per request)."""
    if not requests:
        return []
    models = list(model) if isinstance(model, Sequence) else [model] * len(requests)
    if len(models) != len(requests):
        raise ValueError(f"{len(models)} answer models for {len(requests)} requests")
    answers = judge.generate(list(requests))
    if len(answers) != len(requests):
        raise RuntimeError(f"the judge returned {len(answers)} answers for {len(requests)} requests")
    return [parse_answer(a, m, r.meta.get("stage", "?"), reading=reading) for r, a, m in zip(requests, answers, models)]
