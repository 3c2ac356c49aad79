"""`vlmjudge viescore2 report`: an HTML report over what `viescore2 score` wrote.

It reads the results JSONL (one record per image, with `results.manifest.json` beside it) and
writes into `--out`: `report.html` at the top, `summary.json`, and the figures (the score
histogram and how often each grid cell was flagged). The page has the shared look of every
method's report (`vlmjudge.reports.page`): the summary first, then figures, then the
lowest-scored images with their scores, grid status and explanation.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from html import escape
from pathlib import Path
from typing import Any, Sequence

from vlmjudge.cli.report_command import add_report_command
from vlmjudge.outputs import staged_writer
from vlmjudge.reports.figures import DEFAULT_DPI, FigureFiles, check_dpi, figure_files
from vlmjudge.reports.items import input_roots, item_cell, model_name
from vlmjudge.reports.page import (
    NOTHING_SCORED, ReportInputError, figures_section, fmt_number, long_text, low_res_mark, low_res_note, mean, page,
    read_run, summary_table, worst_section, write_page,
)
from vlmjudge.stats.interval import INTERVAL_HEADING, interval_text, mean_with_interval
from vlmjudge.text import format_score

from .grid import DEFAULT_N
from .parsing import parse_grid

#: The score range of VIEScore2 (0-10), the histogram's x axis.
SCORE_RANGE = (0.0, 10.0)


def _cell(value: Any) -> str:
    """A console cell: floats as every score is printed (`format_score`), None as n/a."""
    if value is None or isinstance(value, float):
        return format_score(value)
    return str(value)


def format_table(metrics: dict[str, Any]) -> str:
    """Two aligned columns: metric name and value (n/a where undefined)."""
    width = max(len(k) for k in metrics)
    return "\n".join(f"{k:<{width}}  {_cell(v)}" for k, v in metrics.items())


def _sub_scores(records: list) -> dict[str, list[float]]:
    """The PQ and SC scores read, each a mean of its own (a key no record holds is left out)."""
    values = {key: [r.scores[key] for r in records if key in r.scores] for key in ("pq", "sc")}
    return {key: found for key, found in values.items() if found}


def score_extras(records: Sequence[Any], parse_failures: int) -> dict[str, Any]:
    """What `viescore2 score` prints after the shared summary: the PQ and SC means read (each with
    its 95% interval and n) and the parse failures."""
    return {**{f"mean_{key}": interval_text(mean_with_interval(values))
               for key, values in _sub_scores(records).items()},
            "parse_failures": parse_failures}


def summarize_run(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts and means of one run: images, scored, mean overall and per score key (each also
    with its 95% interval and n under `intervals`), statuses."""
    scored = [r for r in records if r.get("score") is not None]
    keys = sorted({k for r in records for k in (r.get("scores") or {})})
    statuses = Counter(str(r.get("read_status")) for r in records)
    grids = Counter(str(r["grid_status"]) for r in records if r.get("grid_status") is not None)
    return {"n_images": len(records), "n_scored": len(scored), "mean_score": mean(r["score"] for r in scored),
            "mean_by_key": {k: mean((r.get("scores") or {}).get(k) for r in records) for k in keys},
            "intervals": {"score": mean_with_interval(r["score"] for r in scored),
                          **{k: mean_with_interval((r.get("scores") or {}).get(k) for r in records) for k in keys}},
            "status": dict(statuses), "grid_status": dict(grids),
            "n_low_resolution": sum(low_res_note(r) is not None for r in records)}


def cell_shares(records: Sequence[dict[str, Any]]) -> Any:
    """Per grid cell, the share (%) of images whose read grid flags it (categories joined); None
    when no record has a read grid."""
    import numpy as np

    sizes = {int(r.get("grid_size") or DEFAULT_N) for r in records}
    if len(sizes) != 1:
        return None
    n = sizes.pop()
    total, read = np.zeros((n, n)), 0
    for r in records:
        bodies = [r[k] for k in ("grid", "artifact", "misalign") if r.get(k) is not None]
        if not bodies:
            continue
        read += 1
        cells: set[tuple[int, int]] = set()
        for body in bodies:
            grid, _ = parse_grid(body, n)
            cells |= set(grid.cells) if grid is not None else set()
        for row, col in cells:
            total[row - 1, col - 1] += 1
    if not read:
        return None
    return 100 * total / read


def plot_cell_shares(shares: Any, path: str | os.PathLike, label: str, dpi: int = DEFAULT_DPI) -> FigureFiles:
    """A heatmap of `cell_shares`, rows and columns numbered as in the grid format, coloured from 0
    to the largest share (a colour bar reads it); PNG at `dpi`, and SVG."""
    from vlmjudge.reports.figures import heatmap, new_figure, save_figure, title_lines

    n = shares.shape[0]
    fig = new_figure(7.5, 6.5)
    ax = fig.subplots()
    heatmap(ax, shares, colorbar="% of images with a read grid", cmap="Reds",
            label=(lambda v: f"{v:.0f}") if n <= 16 else None, fontsize=10 if n <= 8 else 6)
    ax.set_xticks(range(n), [str(c + 1) for c in range(n)], fontsize=7)
    ax.set_yticks(range(n), [f"r{r + 1}" for r in range(n)], fontsize=7)
    ax.set_xlabel("grid column (1 is left)")
    ax.set_ylabel("grid row (r1 is top)")
    ax.set_title(title_lines(f"Defect cells: % of images with a read grid flagging each cell ({label})", 75),
                 fontsize=10)
    return save_figure(fig, path, dpi)


def item_name(record: dict[str, Any]) -> str:
    """The image a record is about, as the report names it (its path relative to the input root)."""
    return str(record["id"])


def _row(r: dict[str, Any], roots: Sequence[Path]) -> list[str]:
    """One lowest-scored image: its thumbnail and name, prompt, scores, grid status and explanation."""
    scores = ", ".join(f"{k} {fmt_number(v)}" for k, v in (r.get("scores") or {}).items())
    return [item_cell(item_name(r), roots, r.get("image")) + low_res_mark(low_res_note(r)),
            escape(str(r.get("prompt") or "")), fmt_number(r["score"]), escape(scores),
            escape(str(r.get("grid_status") or "n/a")), long_text(r.get("explanation") or "")]


def _lowest(records: Sequence[dict[str, Any]], worst: int, roots: Sequence[Path]) -> str:
    """The lowest-scored images, each with its thumbnail (images looked for under `roots`)."""
    scored = sorted((r for r in records if r.get("score") is not None), key=lambda r: (r["score"], item_name(r)))
    return worst_section(scored, worst, len(records), ["image", "prompt", "score", "scores", "grid", "explanation"],
                         lambda r, _: _row(r, roots))


@staged_writer
def write_report(results: str | os.PathLike, out_dir: str | os.PathLike, worst: int = 20,
                 dpi: int = DEFAULT_DPI) -> list[Path]:
    """Write the report of one results JSONL into `out_dir`; returns the written paths
    (summary.json, the figures drawn as PNG at `dpi` and as SVG, report.html last), all or none of
    them (`staged_writer`: a failure leaves the earlier report)."""
    from vlmjudge.reports.figures import histogram

    check_dpi(dpi)
    records, manifest = read_run(results)
    bad = [i for i, r in enumerate(records, 1) if "id" not in r]  # (the one key `item_name` reads)
    if bad:
        raise ReportInputError(f"{results}: records {bad[:5]} have no 'id' (is this a viescore2 score output?)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize_run(records)
    label = model_name(manifest)
    summary_json = out / "summary.json"
    summary_json.write_text(json.dumps({"label": label, "manifest": manifest, "summary": summary}, indent=2) + "\n",
                            encoding="utf-8")
    figures: list[tuple[FigureFiles, str]] = []
    if summary["n_scored"]:
        files = figure_files(out / "score_histogram.png")
        clipped = histogram({label: [r["score"] for r in records if r.get("score") is not None]}, files.png,
                            "VIEScore2 score (0-10, higher is better)",
                            f"Scores: {label} ({summary['n_scored']} of {summary['n_images']} images scored)",
                            SCORE_RANGE, dpi=dpi)
        figures.append((files, "Score histogram (0-10)" + (f": {clipped}" if clipped else "")))
    shares = cell_shares(records)
    if shares is not None and shares.max() > 0:
        files = plot_cell_shares(shares, out / "defect_cells.png", label, dpi)
        figures.append((files, "Where defects were flagged: share of images per grid cell"))
    written: list[Path] = [summary_json, *(path for files, _ in figures for path in files)]
    note = NOTHING_SCORED if not summary["n_scored"] else "No grid flagged a defect cell, so there is no map to draw."
    keys = [k for k in summary["mean_by_key"] if k != "overall"]  # the overall score is "mean score"
    head = ["run", "judge model", "images", "scored", *[f"mean {k} {INTERVAL_HEADING}" for k in ("score", *keys)],
            "ok", "partial", "failed", "grids with defects", "clean grids", "low resolution"]
    intervals = summary["intervals"]
    row = [Path(results).name, label, summary["n_images"], summary["n_scored"],
           interval_text(intervals["score"], fmt_number),
           *[interval_text(intervals[k], fmt_number) for k in keys], summary["status"].get("ok", 0),
           summary["status"].get("partial", 0), summary["status"].get("failed", 0) + summary["status"].get("error", 0),
           summary["grid_status"].get("ok", 0), summary["grid_status"].get("none", 0), summary["n_low_resolution"]]
    html = page("VIEScore2 report", summary_table(head, [row]),
                [figures_section(figures, note), _lowest(records, worst, input_roots(manifest, results))],
                subtitle=f"from {Path(results).name}, judged by {label}")
    written.append(write_page(out, html))
    return written


def configure_report(sub: Any) -> None:
    """Add report to the vlmjudge viescore2 sub-commands."""
    add_report_command(sub, write_report, source="results", items="images",
                       source_help="results JSONL written by viescore2 score",
                       help="an HTML report (summary, figures, lowest-scored images) of a score run",
                       description="Read the results JSONL of viescore2 score (and its manifest beside it) and write "
                       "report.html, summary.json and the figures into --out.")
