"""`vlmjudge fager report`: an HTML report over what `fager score` wrote.

It reads a run folder's `details.jsonl` (the project's Verdict lines, or the released layout)
and writes into `--out`: `report.html` at the top, `summary.json`, and the figures (the overall
score histogram and the keep / edit / regenerate decisions). The page has the shared look of
every method's report (`vlmjudge.reports.page`): the summary first, then the figures, then the
lowest-scored images with their level scores, answers and decision.
"""
from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from typing import Any, Sequence

from vlmjudge.cli.report_command import add_report_command
from vlmjudge.outputs import JsonlError, read_manifest, staged_writer
from vlmjudge.reports.figures import DEFAULT_DPI, FigureFiles, check_dpi, figure_files
from vlmjudge.reports.items import input_roots, item_cell, model_name
from vlmjudge.reports.page import (
    NOTHING_SCORED, ReportInputError, figures_section, fmt_number, long_text, low_res_mark, mean, page, summary_table,
    worst_section, write_page,
)
from vlmjudge.stats.interval import INTERVAL_HEADING, interval_text, mean_with_interval

from .records import Verdict

#: The question levels of a Verdict's level scores, and how the summary table names them.
LEVELS = ("level_1", "level_2", "level_3")
LEVEL_NAMES = ("level 1", "level 2", "level 3")
from .saved_runs import ReplayFormatError, read_details

#: FAGER scores are in 0-100: the histogram's x axis.
SCORE_RANGE = (0.0, 100.0)
#: The decisions in the order the report lists them; None is a gate that could not be decided.
DECISIONS = ("keep", "edit", "regenerate", None)


def details_path(run: str | os.PathLike) -> Path:
    """The details.jsonl of a run: the path itself (any JSONL of Verdict lines), or
    `details.jsonl` in a run folder."""
    path = Path(run)
    if path.is_dir():
        path = path / "details.jsonl"
    if not path.is_file():
        raise ReportInputError(f"no details.jsonl at {path} (give a `fager score` --out folder or its details.jsonl)")
    return path


def read_verdicts(path: Path) -> list[Verdict]:
    """The Verdicts of a details.jsonl, from `fager score` or the distributed runner (`read_details`)."""
    return read_details(path)


def summarize_verdicts(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """Counts and means: images, scored, mean overall and per level (each also with its 95% interval
    and n under `intervals`), decisions, answers, failures."""
    decisions = {str(d) if d else "undecided": sum(v.decision == d for v in verdicts) for d in DECISIONS}
    return {"n_images": len(verdicts), "n_scored": sum(v.score is not None for v in verdicts),
            "mean_overall": mean(v.score for v in verdicts),
            "mean_level": {level: mean(getattr(v.level_scores, level) for v in verdicts) for level in LEVELS},
            "intervals": {"overall": mean_with_interval(v.score for v in verdicts),
                          **{level: mean_with_interval(getattr(v.level_scores, level) for v in verdicts)
                             for level in LEVELS}},
            "decisions": decisions, "answers": {k: sum(getattr(v.counts, k) for v in verdicts)
                                                for k in ("yes", "no", "unknown")},
            "parse_failures": sum(v.counts.failed for v in verdicts),
            "n_low_resolution": sum(bool(v.provenance.get("resolution_note")) for v in verdicts)}


def item_name(v: Verdict) -> str:
    """The image a Verdict is about, as the report names it: its file (relative to the items
    table), else its id (the items table's index)."""
    return str(v.image or v.id)


def _row(v: Verdict, roots: Sequence[Path]) -> list[str]:
    """One lowest-scored image: thumbnail and file name, prompt, scores, answers, decision, feedback."""
    return [item_cell(item_name(v), roots) + low_res_mark(v.provenance.get("resolution_note")),
            escape(v.prompt or ""), fmt_number(v.score),
            *(fmt_number(getattr(v.level_scores, k)) for k in ("level_1", "level_2", "level_3")),
            f"{v.counts.yes} / {v.counts.no} / {v.counts.unknown}", escape(v.decision or "undecided"),
            long_text(v.feedback or "")]


def _lowest(verdicts: Sequence[Verdict], worst: int, roots: Sequence[Path]) -> str:
    """The lowest-scored images, each with its thumbnail (images looked for under `roots`)."""
    scored = sorted((v for v in verdicts if v.score is not None), key=lambda v: v.score)
    header = ["image", "prompt", "overall", "level 1", "level 2", "level 3", "yes / no / unknown", "decision",
              "feedback"]
    return worst_section(scored, worst, len(verdicts), header, lambda v, _: _row(v, roots),
                         scored_as="an overall score")


@staged_writer
def write_report(run: str | os.PathLike, out_dir: str | os.PathLike, worst: int = 20,
                 dpi: int = DEFAULT_DPI) -> list[Path]:
    """Write the report of one FAGER run (folder or details.jsonl) into `out_dir`; returns the
    written paths (summary.json, the figures drawn as PNG at `dpi` and as SVG, report.html last),
    all or none of them (`staged_writer`: a failure leaves the earlier report)."""
    from vlmjudge.reports.figures import bars, histogram

    check_dpi(dpi)
    details = details_path(run)
    verdicts = read_verdicts(details)
    try:
        manifest = read_manifest(details) or {}
    except JsonlError as error:
        raise ReportInputError(str(error)) from None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize_verdicts(verdicts)
    label = details.parent.name or details.stem
    summary_json = out / "summary.json"
    summary_json.write_text(json.dumps({"run": str(details), "summary": summary}, indent=2) + "\n", encoding="utf-8")
    figures: list[tuple[FigureFiles, str]] = []
    if summary["n_scored"]:
        files = figure_files(out / "score_histogram.png")
        clipped = histogram({label: [v.score for v in verdicts if v.score is not None]}, files.png,
                            "FAGER overall score (0-100, higher is better)",
                            f"Overall scores ({summary['n_scored']} of {summary['n_images']} scored)", SCORE_RANGE,
                            dpi=dpi)
        figures.append((files, "Overall score histogram (0-100)" + (f": {clipped}" if clipped else "")))
        files = bars(summary["decisions"], out / "decisions.png", "images", "Decisions: keep, edit or regenerate",
                     ylabel="decision", dpi=dpi)
        figures.append((files, "Decisions per image"))
    written: list[Path] = [summary_json, *(path for files, _ in figures for path in files)]
    d, ci = summary["decisions"], summary["intervals"]
    head = ["run", "judge model", "images", "scored",
            *[f"mean {name} {INTERVAL_HEADING}" for name in ("overall", *LEVEL_NAMES)],
            "keep", "edit", "regenerate", "undecided", "parse failures", "low resolution"]
    row = [label, model_name(manifest), summary["n_images"], summary["n_scored"],
           *[interval_text(ci[key], fmt_number) for key in ("overall", *LEVELS)],
           d["keep"], d["edit"], d["regenerate"], d["undecided"], summary["parse_failures"],
           summary["n_low_resolution"]]
    lowest = _lowest(verdicts, worst, input_roots(manifest, details))
    html = page("FAGER report", summary_table(head, [row]), [figures_section(figures, NOTHING_SCORED), lowest],
                subtitle=f"from {details.name} in {label}, judged by {model_name(manifest)}")
    written.append(write_page(out, html))
    return written


def configure_report(commands: Any) -> None:
    """Add report to the vlmjudge fager sub-commands."""
    add_report_command(commands, write_report, source="run", items="images", errors=(ReplayFormatError,),
                       source_help="the --out folder of fager score, or its details.jsonl",
                       help="an HTML report (summary, figures, lowest-scored images) of a score run",
                       description="Read a fager score run (its --out folder, or the details.jsonl in it) and write "
                       "report.html, summary.json and the figures into --out.")
