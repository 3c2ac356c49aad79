"""TerraVis as a registered method (`vlmjudge.methods` entry point `terravis = terravis.spec:SPEC`),
so the CLI, the demo app and the integrations find it without the core importing it."""
from __future__ import annotations

from typing import Any

from vlmjudge.registry import DEFAULT_JUDGE_MODEL, MethodSpec, renders
from vlmjudge.text import format_score

from .annotation import ANNOTATION
from .core import TerraVis
from .human import PROTOCOL
from .records import ImageRecord
from .statistics import STATISTICS


@renders("terravis", ImageRecord)
def render(record: ImageRecord) -> dict[str, Any]:
    """Score text and a markdown account: eligibility, then each violation with its evidence
    and severity (or the rating of a single-call variant)."""
    lines = [f"**TerraVis** ({record.variant}), image `{record.id}`", ""]
    if record.status == "failed":
        score_text = "failed (N/A)"
        lines.append("The judge failed to answer: the image is treated as N/A, not as clean.")
        lines += [f"- {e}" for e in record.errors]
    elif record.status == "not_applicable":
        score_text = "N/A"
        reason = f": {record.eligibility_reason}" if record.eligibility_reason else ""
        lines.append(f"**Eligibility:** not applicable{reason}")
    else:
        score_text = format_score(record.score)
        lines.append("**Eligibility:** eligible")
        if record.rating is not None:
            lines.append(f"**Rating:** {record.rating} / 5")
        else:
            found = [c for c in record.checks if c.detected]
            lines.append(f"**Violations:** {len(found)} ({record.n_major} major, {record.n_minor} minor)")
            for c in found:
                where = f" — {c.aspect}" if c.aspect else ""
                lines.append(f"- **{c.name}** ({c.level}, {c.severity}){where}: {c.evidence or 'no evidence given'}")
    if record.parse_failures:
        lines += ["", f"_{record.parse_failures} answer(s) could not be read; fallbacks applied._"]
    return {"score_text": score_text, "markdown": "\n".join(lines)}


#: `build` is TerraVis itself (config: its keywords variant, lam, alpha, pack, ...); scores
#: already lie in [0, 1], so `normalize` is the identity.
SPEC = MethodSpec(
    name="terravis", inputs=("image",), optional_inputs=("id",), build=TerraVis,
    score_range=(0.0, 1.0), render=render, default_model=DEFAULT_JUDGE_MODEL, human=PROTOCOL,
    description="World-grounded visual consistency: eligibility, 18 violation checks, severity, "
                "S = exp(-lam (N_major + alpha N_minor)).",
    statistics=STATISTICS,
    annotation=ANNOTATION,
)
