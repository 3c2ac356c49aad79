"""The page of `vlmjudge benchmark`: report.html and its figures, in the reports' one look.

It reads top down as a reader asks: which model leads under each metric and how sure each rank is
(the leaderboard), each metric's values with their intervals, the mean rank over the metrics, how
far the metrics agree on the order, the order within each suite category, how far each metric
follows people (with labels), the prompts left out, and a few prompts' images from every model.
Every name and id a user chose is escaped; the page and figures are written whole or not at all.
"""
from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any, Mapping

from vlmjudge.outputs import staged_folder
from vlmjudge.reports.figures import FigureFiles, check_dpi
from vlmjudge.reports.items import find_image, input_roots, thumb_cell
from vlmjudge.reports.page import (empty_state, figure, fmt_number, long_text, page, read_run, section,
                                   summary_table, table, write_page)

from .leaderboard_runs import LeaderboardError
from .report_figures import agreement_matrix, category_heatmap, interval_plot, mean_rank_chart

#: Where the figures go, beside report.html.
FIGURES = "figures"
#: How many prompts the page shows every model's images for.
THUMB_PROMPTS = 4
#: How many images of one prompt a model's cell shows.
THUMBS_PER_CELL = 4
#: How many missing prompt ids the page lists per model.
LISTED_IDS = 50
#: Record fields (at the top, or in `meta` / `provenance`) that may name the image's file.
PATH_KEYS = ("path", "image", "image_path")
#: The five agreement statistics the human table shows, with their titles.
HUMAN_COLUMNS = {"spearman": "Spearman rho", "kendall_tau_b": "Kendall tau-b"}


def _interval(row: Mapping) -> str:
    return f"[{fmt_number(row.get('low'))}, {fmt_number(row.get('high'))}]"


def _rank_range(row: Mapping) -> str:
    return "–" if row.get("rank") is None else f"{row['rank_low']}–{row['rank_high']}"


def _methods(board: dict) -> dict[str, dict]:
    return {m["method"]: m for m in board["methods"]}


def _leaderboard(board: dict) -> str:
    """The summary: every (method, model) row, best first within each method."""
    methods = _methods(board)
    rows = [[f"{r['method']}: {methods[r['method']]['label']}", "–" if r["rank"] is None else r["rank"], r["model"],
             r["value"], _interval(r), _rank_range(r), r["n"], r["n_not_applicable"], r["n_failed"],
             f"{r['n_unscored']} of {r['n_items']}"] for r in board["rows"]]
    confidence = round(100 * board["settings"]["confidence"])
    warned = "".join(f"<li>{escape(line)}</li>" for line in board.get("warnings", []))
    return summary_table(["method: statistic", "rank", "model", "value", f"{confidence}% interval", "rank range", "n",
                          "N/A", "failed", "unscored (N/A, failed)"], rows) + \
        (f'<ul class="warnings" id="warnings">{warned}</ul>' if warned else "")


def _figure(files: FigureFiles, caption: str) -> str:
    """A figure's PNG on the page, with a link to its SVG."""
    return figure(f"{FIGURES}/{files.png.name}", caption, f"{FIGURES}/{files.svg.name}")


def _per_metric(board: dict, folder: Path, dpi: int) -> str:
    parts = []
    for k, method in enumerate(board["methods"], 1):
        rows = [r for r in board["rows"] if r["method"] == method["method"]]
        names = interval_plot(rows, method, board["settings"]["confidence"], folder, f"interval_{k}", dpi)
        parts.append(_figure(names, f"{method['method']}: {method['label']} per model, with its interval"))
    return section("Each metric", "".join(parts), "metrics")


def _mean_rank(board: dict, folder: Path, dpi: int) -> str:
    methods = [m["method"] for m in board["methods"]]
    rows = [[e["model"], e["mean_rank"], e["n_methods"], *("–" if e["ranks"][m] is None else e["ranks"][m]
                                                          for m in methods)] for e in board["mean_rank"]]
    chart = mean_rank_chart(board["mean_rank"], len(board["models"]), folder, "mean_rank", dpi)
    body = (table(["model", "mean rank", "methods", *(f"rank: {m}" for m in methods)], rows)
            + _figure(chart, "Mean rank over the methods (1 is best)"))
    return section("Mean rank", body, "mean-rank")


def _agreement(board: dict, folder: Path, dpi: int) -> str:
    result = board["ranking_agreement"]
    if not result["pairs"]:
        return section("Do the metrics agree on the order?", empty_state(
            "Fewer than two methods rank the models, so there is no pair of rankings to compare."), "agreement")
    methods = [m["method"] for m in board["methods"] if m["method"] not in result["unranked_methods"]]
    matrix = agreement_matrix(result, methods, folder, "ranking_agreement", dpi)
    rows = [[p["a"], p["b"], p["reason"] if p["tau"] is None and "reason" in p else p["tau"], p["n_models"]]
            for p in result["pairs"]]
    lead = (f"<p>Mean Kendall's tau over the {result['n_pairs_defined']} pairs where it is defined: "
            f"<strong>{escape(fmt_number(result['mean']))}</strong> (1: the same order, -1: reversed).</p>")
    body = lead + table(["method a", "method b", "Kendall's tau", "models"], rows) + \
        _figure(matrix, "Kendall's tau between the methods' rankings of the models")
    return section("Do the metrics agree on the order?", body, "agreement")


def _categories(board: dict, folder: Path, dpi: int) -> str:
    if not board["by_category"]:
        return section("By category", empty_state("The suite tags no prompt with a category."), "categories")
    parts = []
    kinds = list(dict.fromkeys(e["kind"] for e in board["by_category"]))
    for k, kind in enumerate(kinds, 1):
        entries = [e for e in board["by_category"] if e["kind"] == kind]
        heat = category_heatmap(entries, kind, board["models"], board["methods"], folder, f"category_{k}", dpi)
        rows = [[e["tag"], e["n_prompts"], r["method"], r["model"], r["value"], _interval(r), r["rank"], _rank_range(r)]
                for e in entries for r in e["rows"]] or [["", 0, "", "", None, "", None, ""]]
        parts.append(f"<h3>{escape(kind)}</h3>" + _figure(heat, f"Each method's value within each {kind}")
                     + table([kind, "prompts", "method", "model", "value", "interval", "rank", "rank range"], rows))
    return section("By category", "".join(parts), "categories")


def _estimate(entry: Mapping, name: str) -> str:
    if "unavailable" in entry:
        return "n/a"
    stat = entry["statistics"][name]
    return f"{fmt_number(stat['value'])} {_interval(stat)}"


def _human(board: dict) -> str:
    human = board.get("human")
    if not human:
        return ""
    models = board["models"] if len(board["models"]) > 1 else []  # one model: its column is "all models" again
    header = ["method", "items", *(f"{title}, all models" for title in HUMAN_COLUMNS.values()),
              *(f"Spearman rho: {m}" for m in models)]
    rows, notes = [], []
    for entry in human["methods"]:
        overall = entry["overall"]
        rows.append([entry["method"], overall["n"], *(_estimate(overall, n) for n in HUMAN_COLUMNS),
                     *(_estimate(entry["by_model"][m], "spearman") for m in models)])
        notes += [f"{entry['method']} on {label}: {where['unavailable']}" for label, where in
                  [("all models", overall), *((m, entry["by_model"][m]) for m in models)] if "unavailable" in where]
    lead = (f"<p>People's labels from {escape(human['path'])} ({escape(human['format'])}"
            f"{', rated as ' + escape(human['labels_method']) + ' labels' if human['labels_method'] else ''}): "
            f"{human['n_labels']} labels, {human['n_unplaced']} of them naming no model under test.</p>")
    listed = "".join(f"<li>{escape(note)}</li>" for note in notes)
    return section("Agreement with people", lead + table(header, rows) + (f"<ul>{listed}</ul>" if listed else ""),
                   "human")


def _missing(board: dict) -> str:
    lines = [f"<li>{escape(model)} lacks {len(ids)}: {escape(', '.join(ids[:LISTED_IDS]))}"
             f"{escape(f' and {len(ids) - LISTED_IDS} more') if len(ids) > LISTED_IDS else ''}</li>"
             for model, ids in board["prompts_missing"].items() if ids]
    lead = (f"<p>{board['n_paired_prompts']} of the suite's {board['suite']['n_prompts']} prompts have a record in "
            "every run; every value, interval and rank rests on those.</p>")
    return section("Prompts left out", lead + (f"<ul>{''.join(lines)}</ul>" if lines else
                                               "<p>Every model has every prompt.</p>"), "missing")


def _recorded(record: Mapping) -> str | None:
    """The image path a record names, if it names one."""
    for holder in (record, record.get("meta"), record.get("provenance")):
        if isinstance(holder, Mapping):
            found = next((holder[k] for k in PATH_KEYS if isinstance(holder.get(k), str)), None)
            if found:
                return found
    return None


def _thumbnails(board: dict, runs: Mapping, suite: Any) -> str:
    """Every model's images for the first few prompts that every model has."""
    lacking = {p for ids in board["prompts_missing"].values() for p in ids}
    prompts = [p for p in suite.prompts if p.id not in lacking][:THUMB_PROMPTS]
    cells: dict[str, dict[str, str]] = {}
    for model in board["models"]:
        path = next(iter(runs[model].values()))
        try:
            records, manifest = read_run(path)
        except (ValueError, OSError) as error:
            raise LeaderboardError(f"cannot read {path} for the report's images: {error}") from None
        roots = input_roots(manifest, path)
        for prompt in prompts:
            mine = [r for r in records if str(r.get("id", "")).partition("/")[0] == prompt.id][:THUMBS_PER_CELL]
            cells.setdefault(prompt.id, {})[model] = "".join(
                thumb_cell(str(r["id"]), find_image(str(r["id"]), roots, _recorded(r))) for r in mine)
    rows = [[f"<strong>{escape(p.id)}</strong><br>{long_text(p.prompt)}",
             *(cells[p.id][model] for model in board["models"])] for p in prompts]
    return section("Images", table(["prompt", *board["models"]], rows, raw=True), "images")


def _check(board: Any, runs: Any, dpi: Any) -> None:
    """The board is build_leaderboard's, the runs name a run of every model on it, the dpi is sane."""
    if not isinstance(board, dict) or not {"rows", "models", "methods", "settings"} <= set(board):
        raise LeaderboardError(f"the report takes the dict build_leaderboard returns, got {type(board).__name__}")
    lacking = [m for m in board["models"] if not isinstance(runs, Mapping) or not isinstance(runs.get(m), Mapping)
               or not runs[m]]
    if lacking:
        raise LeaderboardError(f"runs must give the runs of every model on the board; missing: {', '.join(lacking)}")
    try:
        check_dpi(dpi)
    except ValueError as error:
        raise LeaderboardError(str(error)) from None


def write_benchmark_report(board: dict, runs: Mapping, suite: Any, out_dir: str | os.PathLike, *,
                           dpi: int = 150) -> list[Path]:
    """Write report.html and its figures (figures/*.svg and *.png at `dpi`) into `out_dir`, all or
    none of them (`vlmjudge.outputs.staged_folder`); returns the paths written."""
    _check(board, runs, dpi)
    out = Path(out_dir)
    with staged_folder(out) as stage:
        folder = stage / FIGURES
        parts = [_per_metric(board, folder, dpi), _mean_rank(board, folder, dpi), _agreement(board, folder, dpi),
                 _categories(board, folder, dpi), _human(board), _missing(board), _thumbnails(board, runs, suite)]
        settings = board["settings"]
        subtitle = (f"{len(board['models'])} models, {len(board['methods'])} methods, "
                    f"{board['n_paired_prompts']} paired prompts; {settings['n_resamples']} resamples of the prompts "
                    f"(seed {settings['seed']}), drawn jointly for every model and method")
        html = page(f"Benchmark: {board['suite']['name']}", _leaderboard(board), parts, subtitle)
        written = sorted(p for p in folder.glob("*") if p.is_file()) if folder.is_dir() else []
        written.append(write_page(stage, html))
    return [out / p.relative_to(stage) for p in written]
