"""The page of `vlmjudge agreement`: how far each judge follows people, in the reports' one look.

The summary puts every statistic beside its interval, since a correlation on a few dozen items
is a range rather than a number; then a public set's own statistics (T2IScoreScore's per-graph
ones) beside the pooled correlation, which judge agrees best (with the paired interval that
says whether the lead is real), the human ceiling, a scatter of judge against people per run,
the method's own tables, and the ids that could not be matched.
"""
from __future__ import annotations

import os
import re
from html import escape
from pathlib import Path
from typing import Any

from ..stats.swap import EXACT_BELOW
from .figures import DEFAULT_DPI, FigureFiles, check_dpi, new_figure, plain, save_figure, title_lines
from .page import (PAGE_NAME, empty_state, figures_section, fmt_cell, fmt_number, page, section, summary_table, table,
                   write_page)

#: Column titles of the five statistics, in the order `vlmjudge.stats.human_agreement` computes them.
TITLES = {"pearson": "Pearson r", "spearman": "Spearman rho", "kendall_tau_b": "Kendall tau-b",
          "kendall_tau_c": "Kendall tau-c", "pairwise_accuracy": "pairwise accuracy"}
#: How many unmatched ids the page lists per kind before it says how many more there are.
LISTED_IDS = 50


def with_interval(estimate: dict[str, Any]) -> str:
    """A statistic and its interval as one cell: "0.6234 [0.4100, 0.7790]", by the one rule of score digits.

    >>> with_interval({"value": 0.6234, "low": 0.41, "high": 0.779})
    '0.6234 [0.4100, 0.7790]'
    >>> with_interval({"value": None, "low": None, "high": None, "reason": "too few items: 2"})
    'too few items: 2'
    """
    if estimate.get("value") is None and estimate.get("reason"):
        return str(estimate["reason"])
    return f"{fmt_number(estimate['value'])} [{fmt_number(estimate['low'])}, {fmt_number(estimate['high'])}]"


def scatter(run: dict[str, Any], axes: dict[str, str], path: str | os.PathLike, dpi: int = DEFAULT_DPI) -> FigureFiles:
    """Judge score against people's for one run, one dot per item (PNG at `dpi`, and SVG)."""
    fig = new_figure(5.5, 4.2)
    ax = fig.subplots()
    ax.scatter([item["human"] for item in run["items"]], [item["judge"] for item in run["items"]],
               s=14, alpha=0.6, color="#0b5cad")
    ax.set_xlabel(plain(axes["human"]))
    ax.set_ylabel(plain(axes["judge"]))
    rho = run["statistics"]["spearman"]["value"]
    shown = "n/a" if rho is None else f"{rho:.3f}"
    ax.set_title(title_lines(f"{run['name']}: Spearman rho {shown}, {run['matched']} items", 60), fontsize=9)
    return save_figure(fig, path, dpi)


def _comparison_part(comparison: dict[str, Any] | None) -> str:
    """Which judge agrees best, and each pair's difference with its paired interval."""
    if comparison is None:
        return ""
    if "unavailable" in comparison:
        return section("Which judge agrees best", empty_state(comparison["unavailable"]), "comparison")
    statistic = TITLES[comparison["statistic"]]
    verdict = ("every paired interval against it excludes 0, so the lead is more than resampling noise"
               if comparison["clear"] else
               "some paired interval against it includes 0, so the data do not separate it from that judge")
    lead = (f"<p>On the {comparison['items']} items every run scored, <strong>{escape(comparison['best'])}"
            f"</strong> has the highest {escape(statistic)}; {verdict}.</p>")
    rows = [[pair["a"], pair["b"], pair["diff"], f"[{fmt_number(pair['low'])}, {fmt_number(pair['high'])}]",
             pair["p_greater"]] for pair in comparison["pairs"]]
    header = ["judge A", "judge B", f"{statistic} A - B", "paired interval", "p (A not better)"]
    values = table(["judge", statistic], sorted(comparison["values"].items(), key=lambda kv: -kv[1]))
    sided = ("<p class='source'>Both rest on the same resampled items; p is one-sided (the share of resamples "
             "where A is not better) and the interval two-sided, so an interval above 0 goes with a p below half "
             "of 1 - confidence.</p>")
    return section("Which judge agrees best", lead + values + table(header, rows) + sided, "comparison")


def set_statistics_line(run: dict[str, Any]) -> str:
    """One console line: the set's own statistics of a run beside the pooled one they are read against.

    >>> run = {"name": "j", "matched": 40, "statistics": {"spearman": {"value": 0.88}},
    ...        "set_statistics": {"name": "T2IScoreScore", "unit": "graph", "beside": "spearman",
    ...                           "measures": {"ordering": {"mean": 0.7, "low": 0.6, "high": 0.8, "n": 9}}}}
    >>> print(set_statistics_line(run).replace("; ", ";\\n"))
    j: T2IScoreScore's own statistics, means over graphs: ordering 0.700 [0.600, 0.800] (n=9);
    pooled spearman 0.880 over 40 items
    """
    from ..stats.interval import interval_text

    own = run["set_statistics"]
    measures = ", ".join(f"{name} {interval_text(summary, '{:.3f}'.format)}"
                         for name, summary in own["measures"].items())
    pooled = run["statistics"][own["beside"]]["value"]
    return (f"{run['name']}: {own['name']}'s own statistics, means over {own['unit']}s: {measures}; "
            f"pooled {own['beside']} {pooled:.3f} over {run['matched']} items")


def _set_statistics_part(runs: list[dict[str, Any]]) -> str:
    """The set's own statistics beside the pooled one: T2IScoreScore's per-graph ordering and
    separation next to the Spearman pooled over all its images, which can differ a lot."""
    own_runs = [run for run in runs if run.get("set_statistics")]
    if not own_runs:
        return ""
    first = own_runs[0]["set_statistics"]
    unit, beside = first["unit"], TITLES[first["beside"]]
    header = ["judge", f"{beside}, pooled (items)", *(f"{name}, mean over {unit}s [interval] ({unit}s)"
                                                      for name in first["measures"])]
    rows = [[run["name"], f"{with_interval(run['statistics'][first['beside']])} ({run['matched']})",
             *(_mean_cell(summary) for summary in run["set_statistics"]["measures"].values())] for run in own_runs]
    missing = [f"{run['name']}: {len(summary['without_value'])} {unit}s without {name}"
               for run in own_runs for name, summary in run["set_statistics"]["measures"].items()
               if summary["without_value"]]
    note = (f"<p>{escape(first['name'])} measures a judge within each {unit}: ordering is Spearman's rho of the "
            "judge's score against fewer errors along each walk through a prompt's error graph, separation the "
            "Kolmogorov-Smirnov statistic between nodes of different error counts (it ignores direction); each is "
            f"averaged over {unit}s, with a bootstrap interval over {unit}s. The pooled {escape(beside)} also "
            "rewards telling prompts apart, which these do not, so the two can differ a lot.</p>")
    listed = f"<ul>{''.join(f'<li>{escape(line)}</li>' for line in missing)}</ul>" if missing else ""
    return section(f"{first['name']}'s own statistics", note + table(header, rows) + listed, "set-statistics")


def _mean_cell(summary: dict[str, Any]) -> str:
    """A mean over units with its interval and count: "0.7 [0.6, 0.8] (9)"."""
    if summary["mean"] is None:
        return f"n/a ({summary['n']})"
    bounds = "" if summary["low"] is None else f" [{fmt_number(summary['low'])}, {fmt_number(summary['high'])}]"
    return f"{fmt_number(summary['mean'])}{bounds} ({summary['n']})"


def _ceiling_part(ceiling: dict[str, Any] | None) -> str:
    """How well people agree with each other: the level a judge can be held to."""
    if ceiling is None:
        return section("Human ceiling", empty_state("Each item has one annotator, so there is no ceiling to "
                                                    "compare with."), "ceiling")
    if "unavailable" in ceiling:
        return section("Human ceiling", empty_state(f"{ceiling['annotators']} annotators, but no ceiling: "
                                                    f"{ceiling['unavailable']}"), "ceiling")
    note = (f"<p>Each of {ceiling['annotators']} annotators against the mean of the others, over "
            f"{ceiling['items']} items, averaged: a judge near these values agrees with people about as well "
            f"as they agree with each other.</p><p class='source'>Assumption: {escape(ceiling['assumption'])}"
            f" ({ceiling['items_with_one_rater']} item(s) with one rater left out).</p>")
    rows = [[TITLES.get(name, name), with_interval(ceiling["interval"][name])] for name in ceiling["mean"]]
    return section("Human ceiling", note + table(["statistic", "mean leave-one-out [interval over items]"], rows),
                   "ceiling")


def _details_part(run: dict[str, Any]) -> str:
    """The method's own measures and tables (confusion tables of categorical labels) for one run."""
    details = run["details"] or {}
    parts = []
    if details.get("measures"):
        parts.append(table(["measure", "value"], list(details["measures"].items())))
    for extra in details.get("tables", []):
        parts.append(f"<h3>{escape(extra['title'])}</h3>" + table(extra["header"], extra["rows"]))
    return f"<h3>{escape(run['name'])}</h3>" + "".join(parts) if parts else ""


def _unmatched_part(run: dict[str, Any]) -> str:
    """The ids left out of one run's statistics, by reason."""
    kinds = (("human items with no record", run["unmatched"]["human_only"]),
             ("records with no human label", run["unmatched"]["run_only"]),
             ("items the judge did not score", run["unscored"]),
             ("items people marked not applicable", run["not_applicable"]))
    lines = []
    for what, ids in kinds:
        if ids:
            more = f" and {len(ids) - LISTED_IDS} more" if len(ids) > LISTED_IDS else ""
            listed = ", ".join(fmt_cell(i) for i in ids[:LISTED_IDS])
            lines.append(f"<li>{len(ids)} {escape(what)}: {listed}{escape(more)}</li>")
    return f"<h3>{escape(run['name'])}</h3><ul>{''.join(lines)}</ul>" if lines else ""


def write_agreement_report(result: dict[str, Any], out_dir: str | os.PathLike, dpi: int = DEFAULT_DPI) -> Path:
    """Write report.html and a scatter per run (PNG at `dpi`, and SVG) into `out_dir`, all or none
    of them (`vlmjudge.outputs.staged_folder`: a failure leaves the earlier report); returns the
    page's path."""
    from ..outputs import staged_folder, without_negative_zero

    check_dpi(dpi)
    out = Path(out_dir)
    with staged_folder(out) as stage:
        _write_agreement_files(without_negative_zero(result), stage, dpi)
    return out / PAGE_NAME


def _write_agreement_files(result: dict[str, Any], out: Path, dpi: int) -> Path:
    """The scatter figures and report.html of `write_agreement_report`, written into `out`."""
    header = ["judge", "items", *TITLES.values()]
    rows = [[run["name"], run["matched"], *(with_interval(run["statistics"][name]) for name in TITLES)]
            for run in result["runs"]]
    figures = []
    for number, run in enumerate(result["runs"], start=1):
        name = f"scatter_{number}_{re.sub(r'[^A-Za-z0-9._-]+', '_', run['name'])[:60]}.png"
        files = scatter(run, result["axes"], out / name, dpi)
        figures.append((files, f"{run['name']}: judge score against people's, one dot per item"))
    settings = result["settings"]
    subtitle = (f"{result['method'] or 'generic labels'} against {result['human']['path']} "
                f"({result['human']['format']}); {int(settings['confidence'] * 100)}% percentile bootstrap "
                f"intervals from {settings['resamples']} resamples")
    details = "".join(_details_part(run) for run in result["runs"])
    unmatched = "".join(_unmatched_part(run) for run in result["runs"])
    parts = [_set_statistics_part(result["runs"]), _comparison_part(result["comparison"]),
             _ceiling_part(result["ceiling"]), figures_section(figures),
             section("The method's own checks", details, "details") if details else "",
             section("Left out of the statistics", unmatched, "unmatched") if unmatched else ""]
    few = [run["name"] for run in result["runs"] if run.get("unreliable")]
    warned = (f'<ul class="warnings" id="warnings"><li>{escape(", ".join(few))}: under {EXACT_BELOW} items, the '
              "intervals are unreliable</li></ul>") if few else ""
    html = page("How far to trust the judge", summary_table(header, rows) + warned, parts, subtitle)
    return write_page(out, html)
