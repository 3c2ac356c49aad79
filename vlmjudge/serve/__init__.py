"""`vlmjudge serve`: an OpenAI-compatible HTTP server over any Judge, so one GPU serves many.

Clients use the OpenAI-compatible backend (`backend="openai"`, `base_url=".../v1"`); concurrent
requests are micro-batched into the judge's batched calls. The endpoints, extensions and limits
are in docs/serving.md. Modules: `server` (JudgeServer), `cli` (the flags), `handler` (HTTP),
`batcher` (micro-batching), `parse` (bodies to judge calls, ServeLimits), `faults` (fault
injection for client tests).
"""
from __future__ import annotations

from .cli import configure_serve, main, run_serve
from .faults import FaultInjector
from .parse import BadRequest, ServeLimits
from .server import MAX_BODY_BYTES, JudgeServer

__all__ = ["MAX_BODY_BYTES", "BadRequest", "FaultInjector", "JudgeServer", "ServeLimits", "configure_serve",
           "main", "run_serve"]
