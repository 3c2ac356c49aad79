"""The comparison report of `vlmjudge compare`: comparison.json and report.html in one folder.

The page reads top down as a researcher asks: which run leads and how sure is its rank
(leaderboard), by how much each pair differs (forest plot and pairwise matrix, diff = b - a), then
the other statistics and the per-category breakdown. Mixed runs carry a banner.
"""
from __future__ import annotations

import json
import math
import os
from html import escape
from pathlib import Path
from typing import Any

from .figures import DEFAULT_DPI, FigureFiles
from .intervals import interval_plot
from .page import empty_state, figure, fmt_number, page, section, summary_table, table, write_page

#: The figures' names at the top of the report folder (each a PNG and an SVG).
FOREST_NAME, LEADERBOARD_NAME = "forest.png", "leaderboard.png"
BANNER_CSS = ("<style>.mixed { background: #fdecea; border-left: 4px solid #b00; padding: 0.6em 0.9em; "
              "font-weight: 600; }</style>")


def _interval(row: dict) -> str:
    """'[low, high]' of a row, or n/a."""
    return f"[{fmt_number(row.get('low'))}, {fmt_number(row.get('high'))}]" if "low" in row else "n/a"


def _leaderboard(result: dict) -> str:
    """The headline statistic per run: value, interval, rank and its bootstrap range, counts."""
    rows = [[r.get("rank", "–"), r["label"], r["value"], _interval(r),
             f"{r['rank_low']}–{r['rank_high']}" if "rank_low" in r else "–", r["n"], r["n_na"], r["n_failed"],
             f"{r['n_unscored']} of {r['n_items']}"] for r in result["leaderboard"]]
    return summary_table(["rank", "run", result["statistics"][result["statistic"]]["label"],
                          f"{round(100 * result['confidence'])}% interval", "rank range", "n", "N/A", "failed",
                          "unscored (N/A, failed, absent)"], rows) + _warnings(result.get("warnings", []), "warnings")


def _warnings(lines: list[str], anchor: str = "") -> str:
    """Warnings (runs on different numbers of items, too few items, an interval against its p), one
    per line; `anchor` is the list's id."""
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    return f'<ul class="warnings"{f" id={anchor!r}" if anchor else ""}>{items}</ul>' if lines else ""


def _pairs_table(pairs: list[dict], tests: bool = True) -> str:
    """One row per pair: diff = b - a, interval, p and Holm's p, N/A and failure share differences."""
    header = ["a", "b", "n", "diff (b − a)", "interval"] + (["p", "p (Holm)"] if tests else []) + \
        ["N/A share b − a", "failed share b − a", "unpaired"]
    rows = []
    for p in pairs:
        if "diff" not in p:
            rows.append([p["a"], p["b"], 0, p.get("note", "n/a"), "", *([""] * (2 if tests else 0)), "", "", ""])
            continue
        rows.append([p["a"], p["b"], p["n"], p["diff"], _interval(p),
                     *([p.get("p_value"), p.get("p_holm")] if tests else []),
                     p["na_share_diff"], p["failed_share_diff"], p["n_unpaired"]])
    notes = [f"{p['b']} − {p['a']}: {p[key]}" for p in pairs for key in ("note", "interval_vs_p")
             if "diff" in p and key in p]
    # (a table wider than the page scrolls in its own box); each caveat in one sentence below it
    return table(header, rows) + (_warnings(notes) if notes else "")


def _p_text(value: Any) -> str:
    return "n/a" if value is None else fmt_number(value)


def forest_plot(pairs: list[dict], path: str | os.PathLike, label: str, confidence: float,
                dpi: int = DEFAULT_DPI) -> FigureFiles | None:
    """Each pair's difference with its interval on one axis around 0, its n and p (and Holm's p)
    beside it; None when no pair has one."""
    shown = [p for p in pairs if "diff" in p]
    if not shown:
        return None
    rows = [{"label": f"{p['b']} − {p['a']}", "value": p["diff"], "low": p.get("low"), "high": p.get("high")}
            for p in shown]
    notes = [f"n={p['n']}  p={_p_text(p.get('p_value'))}  Holm p={_p_text(p.get('p_holm'))}" for p in shown]
    return interval_plot(rows, path, dpi=dpi, zero_line=True, notes=notes, notes_title="n paired items, p (swap test)",
                         xlabel=f"difference in {label} (b − a), {round(100 * confidence)}% interval",
                         ylabel="pair of runs (b − a)")


def leaderboard_plot(result: dict, path: str | os.PathLike, dpi: int = DEFAULT_DPI) -> FigureFiles | None:
    """The leaderboard as dots and intervals, best run on top, each run's n and rank range beside
    it; None when no run has a value."""
    board = result["leaderboard"]
    if not any(r.get("value") is not None for r in board):
        return None
    head = result["statistics"][result["statistic"]]["label"]
    rows = [{"label": r["label"], "value": r.get("value"), "low": r.get("low"), "high": r.get("high")} for r in board]
    notes = [f"n={r['n']}  rank {r['rank_low']}–{r['rank_high']}" if "rank_low" in r else f"n={r['n']}"
             for r in board]
    return interval_plot(rows, path, dpi=dpi, notes=notes, notes_title="items, rank range",
                         xlabel=f"{head}, {round(100 * result['confidence'])}% interval", ylabel="run")


def _statistics(result: dict) -> str:
    """The other statistics the method declares, each with its board and pairs."""
    parts = []
    for name, stat in result["statistics"].items():
        if name == result["statistic"]:
            continue
        rows = [[r["label"], r["value"], _interval(r), r["n"]] for r in stat["leaderboard"]]
        parts.append(f"<h3>{escape(stat['label'])}</h3><p class='source'>{escape(stat['description'])}</p>"
                     + table(["run", "value", "interval", "n"], rows) + _pairs_table(stat["pairwise"]))
    return section("Other statistics", "".join(parts), "statistics") if parts else ""


def _breakdown(result: dict) -> str:
    """Per group and category: each run's value with its interval, and each pair's difference."""
    if not result["breakdown"]:
        return ""
    parts = []
    for group, entries in result["breakdown"].items():
        labels = result["labels"]
        header = ["category", *[f"{label}" for label in labels],
                  *[f"{p['b']} − {p['a']}" for p in next(iter(entries.values()))["pairwise"]]]
        rows = []
        for category, entry in entries.items():
            by_label = {r["label"]: r for r in entry["leaderboard"]}
            values = [f"{fmt_number(by_label[x]['value'])} {_interval(by_label[x])} (n={by_label[x]['n']})"
                      for x in labels]
            diffs = [f"{fmt_number(p['diff'])} {_interval(p)}" if "diff" in p else "n/a" for p in entry["pairwise"]]
            rows.append([category, *values, *diffs])
        parts.append(f"<h3>{escape(group)}</h3>{table(header, rows)}")
    return section("Breakdown by category", "".join(parts), "breakdown")


def _unpaired(result: dict) -> str:
    """Ids some run lacks: they count in no pair."""
    lines = [f"<li>{escape(label)} lacks {len(ids)}: {escape(', '.join(map(str, ids[:20])))}"
             f"{' …' if len(ids) > 20 else ''}</li>" for label, ids in result["unpaired"].items() if ids]
    body = f"<ul>{''.join(lines)}</ul>" if lines else "<p>Every run scored the same items.</p>"
    return section("Unpaired items", body, "unpaired")


def render_html(result: dict, forest: FigureFiles | None, leaderboard: FigureFiles | None = None) -> str:
    """The whole comparison page (the figures named by their files beside it)."""
    head = result["statistics"][result["statistic"]]
    banner = ""
    if result["mixed"]:
        banner = (f'<p class="mixed" id="mixed">Mixed runs (--allow-mixed): '
                  f'{escape("; ".join(result["mixed_reasons"]))}. Differences may come from the instrument, '
                  "not the models.</p>")
    plot = figure(forest.png.name, f"Pairwise differences in {head['label']} (b − a), with each pair's n and p",
                  forest.svg.name) if forest else \
        empty_state("No pair of runs scored a common item, so there is no difference to plot.")
    board = figure(leaderboard.png.name, f"{head['label']} per run with its interval", leaderboard.svg.name) \
        if leaderboard else ""
    parts = [section("Leaderboard", board, "leaderboard") if board else "",
             section("Pairwise differences", plot + _pairs_table(result["pairwise"]), "pairwise"),
             _statistics(result), _breakdown(result), _unpaired(result)]
    subtitle = (f"{result['method']}: {len(result['labels'])} runs, {result['n_resamples']} resamples, seed "
                f"{result['seed']}; diff = b − a, p from swapping runs within items, Holm over pairs")
    html = page(f"Comparison: {head['label']}", BANNER_CSS + banner + _leaderboard(result), parts, subtitle)
    return html


def finite(value: Any) -> Any:
    """The result with NaN and infinities as None, so comparison.json stays strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def write_comparison(result: dict, out_dir: str | os.PathLike, dpi: int = DEFAULT_DPI) -> list[Path]:
    """Write comparison.json, the leaderboard and forest plots (PNG at `dpi`, and SVG) and
    report.html into `out_dir`, all or none of them (`vlmjudge.outputs.staged_folder`: a failure
    leaves the earlier report); returns their paths."""
    from ..outputs import staged_folder
    from .figures import check_dpi

    check_dpi(dpi)
    out = Path(out_dir)
    with staged_folder(out) as stage:
        data = stage / "comparison.json"
        data.write_text(json.dumps(finite(result), indent=2, default=str, allow_nan=False) + "\n", encoding="utf-8")
        head = result["statistics"][result["statistic"]]["label"]
        board = leaderboard_plot(result, stage / LEADERBOARD_NAME, dpi)
        forest = forest_plot(result["pairwise"], stage / FOREST_NAME, head, result["confidence"], dpi)
        written = [data, *(path for files in (board, forest) if files for path in files)]
        written.append(write_page(stage, render_html(result, forest, board)))
    return [out / path.relative_to(stage) for path in written]
