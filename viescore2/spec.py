"""VIEScore2 as a registered method (entry point `viescore2 = viescore2.spec:SPEC`), so the CLI, the
demo app and the integrations find it without the core importing it."""
from __future__ import annotations

from typing import Any

from vlmjudge.registry import DEFAULT_JUDGE_MODEL, MethodSpec, renders
from vlmjudge.text import format_score

from .annotation import ANNOTATION
from .core import VIEScore2
from .human import PROTOCOL
from .records import VIEScore2Record
from .statistics import STATISTICS


@renders("viescore2", VIEScore2Record)
def render(record: VIEScore2Record) -> dict[str, Any]:
    """Score text, a markdown account (scores, explanation, reading status, raw answer) and the
    overlay of the predicted cells on the generated image when a grid was read."""
    overall = record.overall
    score_text = f"{format_score(overall)}/10" if overall is not None else f"unscored ({record.status})"
    lines = [f"**VIEScore2** ({record.fields}, {record.grid_size}x{record.grid_size} grid), image `{record.id}`", ""]
    if record.scores:
        lines.append("**Scores:** " + ", ".join(f"{k} {format_score(v)}/10" for k, v in record.scores.items()))
        lines.append("")
    lines += [record.explanation, ""]
    if record.missing:
        lines.append(f"_Not read from the answer: {', '.join(record.missing)} (read status {record.read_status}, "
                     f"finish reason {record.finish_reason})._")
        lines.append("")
    lines += ["Judge output:", "```", record.text.replace("```", "'''") or "(empty)", "```"]
    shown: dict[str, Any] = {"score_text": score_text, "markdown": "\n".join(lines)}
    if record.localization is not None and record.image is not None:
        from .figures import render_overlay
        shown["image"] = render_overlay(record.image, record.localization)
    return shown


#: `build` is VIEScore2 itself (config: its keywords fields, grid_size, pack, ...); `normalize`
#: maps 0-10 linearly to [0, 1].
SPEC = MethodSpec(
    name="viescore2", build=VIEScore2, inputs=("image", "prompt"), optional_inputs=("conditioning", "id"),
    score_range=(0.0, 10.0), render=render, default_model=DEFAULT_JUDGE_MODEL, human=PROTOCOL,
    description="0-10 scores (overall, or PQ and SC with overall sqrt(PQ*SC)) and a 16 x 16 grid of defect "
                "cells (visual artifacts, semantic misalignments) in one constrained judge pass.",
    statistics=STATISTICS,
    annotation=ANNOTATION,
)
