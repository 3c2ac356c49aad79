"""The report's HTML page: rankings, figures, analyses, and the worst images with their
evidence. Thumbnails are embedded (`vlmjudge.reports.items`), so the page is one
self-contained file next to its PNG figures."""
from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any, Mapping, Sequence

from vlmjudge.reports.figures import FigureFiles
from vlmjudge.reports.items import item_cell
from vlmjudge.reports.page import (
    NOTHING_SCORED, empty_state, figures_section, fmt_cell, fmt_number, long_text, low_res_mark, page, summary_table,
    table,
)
from vlmjudge.stats.interval import INTERVAL_HEADING, interval_text

from .records import ImageRecord

#: The figures' captions, by the key `write_report` names them with.
CAPTIONS = {"levels": "Violation shares by level (cf. Figure A1)",
            "types": "Violation shares by type (cf. Figure A2)", "histogram": "Score histogram"}


def item_name(record: ImageRecord) -> str:
    """The image a record is about, as the report names it (its path relative to the input root)."""
    return record.id


def image_card(record: ImageRecord, model: str, search: Sequence[Path]) -> str:
    """One worst-image entry: thumbnail and file name, score, and each violation with severity and
    evidence; `model` is the T2I model (group) the image counts under."""
    picture = item_cell(item_name(record), search, record.meta.get("path"))
    items = []
    for c in record.checks:
        if not c.detected:
            continue
        where = f" ({escape(c.aspect)})" if c.aspect else ""
        severity = c.severity or "unknown"
        items.append(f'<li><b>{escape(c.name)}</b> [{escape(c.level)}, <span class="{escape(severity)}">'
                     f'{escape(severity)}</span>]{where}: {long_text(c.evidence or "no evidence given")}</li>')
    if record.rating is not None:
        items.append(f"<li>rating {record.rating} / 5 ({escape(record.variant)})</li>")
    body = "<ul>" + "".join(items) + "</ul>" if items else "<p>no violation listed</p>"
    mark = low_res_mark(record.meta.get("resolution_note"))
    return (f'<div class="card">{picture}<div><h4>score {fmt_number(record.score)}{mark}</h4>'
            f"<p>T2I model <b>{escape(model)}</b> &middot; {record.n_major} major, {record.n_minor} minor</p>"
            f"{body}</div></div>")


def _human_section(h: Mapping[str, Any]) -> str:
    parts = [f"<h3>Agreement with human ratings</h3><p>{h['n_matched']} images with human ratings "
             f"({h['n_unmatched']} without).</p>"]
    agree = h["agreement"]
    rows = [["pooled", *(agree["pooled"][k] for k in ("n", "spearman", "kendall", "pearson"))]]
    if len(agree["by_group"]) > 1:  # one T2I model's row would repeat the pooled one
        rows += [[g, *(c[k] for k in ("n", "spearman", "kendall", "pearson"))] for g, c in agree["by_group"].items()]
    parts.append(table(["images", "n", "Spearman", "Kendall", "Pearson"], rows))
    if "detection" in h:
        d = h["detection"]
        parts.append("<h4>Image-level detection vs human majority</h4>" +
                     f"<p>Human labels: {escape(str(d.get('label_source') or 'given'))}; "
                     "a positive needs a majority of all annotators (2 of 3).</p>" +
                     table(["n", "precision", "recall", "tp", "fp", "fn", "tn"],
                            [[d[k] for k in ("n", "precision", "recall", "tp", "fp", "fn", "tn")]]))
    elif "detection_skipped" in h:
        parts.append(f"<h4>Image-level detection vs human majority</h4><p>{escape(h['detection_skipped'])}</p>")
    if "alpha_sweep" in h:
        parts.append("<h4>Alpha sweep (Table A3)</h4>" +
                     table(["lambda", "alpha", "n", "Spearman", "Kendall", "Pearson"],
                            [[r[k] for k in ("lam", "alpha", "n", "spearman", "kendall", "pearson")]
                             for r in h["alpha_sweep"]]))
    if "check_ablation" in h:
        ab = h["check_ablation"]
        parts.append("<h4>Check ablations (Table A2)</h4>" +
                     table(["check", "alone: Spearman", "without: Spearman", "change"],
                            [[t, ab["single"][t]["spearman"], ab["leave_one_out"][t]["spearman"],
                              ab["leave_one_out"][t]["delta"]] for t in ab["single"]]))
    if "style_split" in h:
        parts.append("<h4>By style</h4>" +
                     table(["style", "n", "Spearman", "Kendall", "Pearson"],
                            [[s, *(c[k] for k in ("n", "spearman", "kendall", "pearson"))]
                             for s, c in h["style_split"].items()]))
    return "".join(parts)


def _evaluator_section(rep: Mapping[str, Any], worst: Sequence[ImageRecord], models: Mapping[str, str],
                       search: Sequence[Path]) -> str:
    s = rep["summary"]
    parts = [f"<h2>{escape(rep['label'])}</h2><p class=\"source\">from {escape(', '.join(rep['sources']))}</p>"]
    ranked = {row["model"] for row in rep["ranking"]}
    rows = [[row["rank"], row["model"], row["mean_score"], rep["models"][row["model"]]["n_images"],
             rep["models"][row["model"]]["n_scored"], rep["models"][row["model"]]["na_rate"],
             rep["models"][row["model"]]["images_with_violation"]] for row in rep["ranking"]]
    rows += [[None, m, None, ms["n_images"], ms["n_scored"], ms["na_rate"], ms["images_with_violation"]]
             for m, ms in rep["models"].items() if m not in ranked]
    parts.append("<h3>T2I models, best first</h3>" +
                 table(["rank", "model", "mean score", "images", "scored", "N/A rate", "with violation"], rows))
    if "human" in rep:
        parts.append(_human_section(rep["human"]))
    if worst:
        parts.append(f"<h3>The {len(worst)} lowest-scored images</h3>")
        parts += [image_card(r, models[r.id], search) for r in worst]
    elif not s["n_scored"]:  # (with scored images and --worst 0, no list was asked for)
        parts.append("<h3>Lowest-scored images</h3>" + empty_state(
            f"None of the {s['n_images']} images was scored ({s['n_not_applicable']} N/A, {s['n_failed']} failed), "
            "so there are no lowest-scored images to show."))
    return "".join(parts)


def _summary(data: Mapping[str, Any], low_res: Mapping[str, int]) -> str:
    """The summary table: one row per evaluator, counts and the mean score with its 95% interval and n."""
    rows = [[rep["label"], s["n_images"], s["n_scored"], s["n_not_applicable"], s["n_failed"],
             interval_text(rep["score_interval"], fmt_number), s["n_major"], s["n_minor"],
             low_res.get(rep["label"], 0), s["parse_failures"]]
            for rep in data["evaluators"] for s in [rep["summary"]]]
    return summary_table(["evaluator", "images", "scored", "N/A", "failed", f"mean score {INTERVAL_HEADING}", "major",
                          "minor", "low resolution", "parse failures"], rows)


def render_html(data: Mapping[str, Any], figures: Mapping[str, FigureFiles], worst: Mapping[str, Sequence[ImageRecord]],
                models: Mapping[str, Mapping[str, str]], search: Sequence[Path],
                low_res: Mapping[str, int] | None = None, figures_note: str = NOTHING_SCORED) -> str:
    """The whole page: the summary, ranking agreement, the figures (each PNG shown and its SVG
    linked, by file name; the `figures_note` when none was drawn), then per evaluator its tables and worst images.
    `low_res` counts each evaluator's images flagged as low resolution."""
    parts = []
    if "ranking_agreement" in data:
        ra = data["ranking_agreement"]
        parts.append("<h2>Ranking agreement between evaluators (Kendall tau, Table A4)</h2>" +
                     table(["evaluator A", "evaluator B", "Kendall tau"],
                            [[p["a"], p["b"], p["kendall_tau"]] for p in ra["pairs"]]) +
                     f"<p>mean tau: {fmt_cell(ra['mean'])}</p>")
    shown = [(files, CAPTIONS.get(key, key)) for key, files in figures.items()]
    parts.append(figures_section(shown, figures_note, notes=[] if "levels" in figures else [figures_note]))
    for rep in data["evaluators"]:
        parts.append(_evaluator_section(rep, worst[rep["label"]], models[rep["label"]], search))
    n_sources = sum(len(rep["sources"]) for rep in data["evaluators"])
    return page("TerraVis report", _summary(data, low_res or {}), parts,
                subtitle=f"{len(data['evaluators'])} evaluator(s) over {n_sources} run file(s)")
