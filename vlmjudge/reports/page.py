"""The one look of every method's `report.html`: page skeleton, CSS, summary table, number
formatting, empty-state messages, figures and low-resolution marks.

Each method's report module builds its own tables and figures and hands them to `page`, so the
four reports share their layout: the title, the summary table first, then the figures, then the
details. The core knows no method; everything method-specific arrives as arguments.

Examples:
    >>> fmt_number(1.2e-4), fmt_number(0.367879441), fmt_number(None)
    ('0.0001200', '0.3679', 'n/a')
    >>> "No image was scored" in empty_state("No image was scored.")
    True
"""
from __future__ import annotations

import math
import os
import re
from html import escape
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..text import SCORE_DIGITS, format_score
from .figures import FigureFiles

#: Significant digits of the scores and means a report shows: those of every printed score.
DIGITS = SCORE_DIGITS
#: The report page's file name, at the top of a report's --out folder.
PAGE_NAME = "report.html"
#: A word this long (no space in it) may break anywhere in a table cell; shorter ones never split.
LONG_WORD = 24
LONG_RUN = re.compile(r"\S{%d,}" % LONG_WORD)
#: Where a long word may wrap: after a `/`, `_`, `-` or `.`.
WORD_END = re.compile(r"(?<=[/_.\-])")
TAG = re.compile(r"<[^>]*>")
#: How much of a long model text (explanation, feedback, evidence) a report shows before its toggle.
SHOWN_CHARS = 240
#: What a report says when no image got a score: shown instead of empty figures and lists.
NOTHING_SCORED = "No image was scored, so there is nothing to plot or rank."

CSS = """
:root { --ink: #1f2328; --muted: #57606a; --line: #d0d7de; --head: #f6f8fa; --accent: #0b5cad; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: var(--ink);
       background: #ffffff; line-height: 1.45; overflow-wrap: anywhere; }
main { max-width: 1200px; margin: 0 auto; padding: 1.5em 2em 3em; }
header.report { border-bottom: 3px solid var(--accent); margin-bottom: 1.2em; }
h1 { font-size: 1.7em; margin: 0.2em 0; }
h2 { font-size: 1.3em; margin-top: 1.6em; border-bottom: 1px solid var(--line); padding-bottom: 0.2em; }
h3 { font-size: 1.1em; margin-top: 1.2em; }
p.subtitle, p.source { color: var(--muted); margin: 0.2em 0 0.8em; }
.table-box { max-width: 100%; overflow-x: auto; margin: 0.5em 0 1.2em; }
table { border-collapse: collapse; max-width: 100%; }
th, td { border: 1px solid var(--line); padding: 0.3em 0.7em; text-align: left; font-size: 0.92em;
         vertical-align: top; overflow-wrap: break-word; }
th.long, td.long, .thumb .filename { overflow-wrap: anywhere; }
td.long { min-width: 10em; }
pre, code { white-space: pre-wrap; overflow-wrap: anywhere; }
th { background: var(--head); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.summary th { background: #e8f0fa; }
figure { margin: 1em 0 1.6em; }
figure img { max-width: 100%; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 0.9em; }
p.empty { background: #fff8e1; border-left: 4px solid #d4a72c; padding: 0.6em 0.9em; }
.lowres { display: inline-block; background: #fdecea; color: #8a1c12; border: 1px solid #e8a29a;
          border-radius: 3px; padding: 0 0.35em; font-size: 0.8em; font-weight: 600; }
.card { display: flex; gap: 1em; border: 1px solid var(--line); padding: 0.8em; margin: 0.6em 0; }
.card > .thumb { flex: 0 0 auto; align-self: flex-start; }
.card > div:last-child { min-width: 0; }
.thumb { width: 140px; font-size: 0.8em; }
.thumb img { display: block; max-width: 96px; max-height: 96px; border: 1px solid var(--line); }
.thumb .filename { display: block; color: var(--muted); margin-top: 0.2em; }
.thumb .nopic { display: flex; align-items: center; justify-content: center; width: 96px; height: 64px;
                background: var(--head); border: 1px dashed var(--line); color: #a00; }
details.more summary { cursor: pointer; list-style: none; }
details.more summary .toggle { color: var(--accent); white-space: nowrap; }
details.more[open] summary .start { display: none; }
.major { color: #b00; font-weight: bold; }
.minor { color: #b60; }
"""


def fmt_number(value: Any, digits: int = DIGITS) -> str:
    """A number as a report shows it: ints (counts) as they are, floats as the console prints every
    score (`vlmjudge.text.format_score`: `digits` significant digits, 1.2e-4 still visible); None and
    NaN as "n/a", infinities as ∞."""
    if value is None or isinstance(value, bool):
        return "n/a" if value is None else ("yes" if value else "no")
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return format_score(value, digits)


def breakable(text: Any) -> str:
    """Text as HTML, escaped, where each word of `LONG_WORD` characters or more (an id, a file name)
    may wrap after a `/`, `_`, `-` or `.` in it (a `<wbr>`), at a boundary of its own words, rather
    than between any two letters.

    Examples:
        >>> breakable("runs/seed-0123456789-seed-0123456789.png & more")
        'runs/<wbr>seed-<wbr>0123456789-<wbr>seed-<wbr>0123456789.<wbr>png &amp; more'
    """
    text, parts, start = str(text), [], 0
    for run in LONG_RUN.finditer(text):
        parts.append(escape(text[start:run.start()]))
        parts.append("<wbr>".join(escape(piece) for piece in WORD_END.split(run.group()) if piece))
        start = run.end()
    return "".join(parts) + escape(text[start:])


def fmt_cell(value: Any) -> str:
    """One table cell's HTML: numbers through `fmt_number`, text escaped (`breakable`)."""
    if value is None or isinstance(value, (bool, int, float)):
        return fmt_number(value)
    return breakable(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell_attributes(cell: Any, html: str, raw: bool) -> str:
    """A cell's class ("num" for numbers, kept on one line; "long" for text holding a word of
    `LONG_WORD` characters or more, which may break anywhere should its own boundaries not do;
    other text breaks only between words, so "none" or "score" never split) and, for such a long
    text cell, its whole text as a `title` (shown on hover, when the cell shows it over lines)."""
    if _is_number(cell):
        return ' class="num"'
    text = TAG.sub(" ", html) if raw else str(cell)
    if not LONG_RUN.search(text):
        return ""
    return ' class="long"' + ("" if raw else f' title="{escape(text)}"')


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], css_class: str = "", raw: bool = False) -> str:
    """An HTML table; numbers right-aligned, in a box that scrolls sideways by itself should the
    table still be wider than the page. With `raw`, cells that are text are inserted as HTML (the
    caller escaped them, e.g. to add a low-resolution mark or a thumbnail)."""
    head = "".join(f"<th{_cell_attributes(h, h, False)}>{breakable(h)}</th>" for h in header)
    lines = []
    for row in rows:
        cells = []
        for cell in row:
            as_html = raw and isinstance(cell, str)
            text = cell if as_html else fmt_cell(cell)
            cells.append(f"<td{_cell_attributes(cell, text, as_html)}>{text}</td>")
        lines.append("<tr>" + "".join(cells) + "</tr>")
    cls = f' class="{escape(css_class)}"' if css_class else ""
    body = "".join(lines)
    return f'<div class="table-box"><table{cls}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def summary_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """The summary: counts and means, one row per run (or evaluator), under the page title."""
    return f'<section id="summary"><h2>Summary</h2>{table(header, rows, "summary")}</section>'


def long_text(text: Any, limit: int = SHOWN_CHARS) -> str:
    """Model text as HTML, escaped: whole when short, else its first `limit` characters with a toggle
    that shows the rest, so one verbose answer neither hides the table nor is cut off for good.

    Examples:
        >>> long_text("a <b> c")
        'a &lt;b&gt; c'
        >>> "show all 300 characters" in long_text("x" * 300)
        True
    """
    text = str(text)
    if len(text) <= limit:
        return escape(text)
    return (f'<details class="more"><summary><span class="start">{escape(text[:limit])}… </span>'
            f'<span class="toggle">show all {len(text):,} characters</span></summary>{escape(text)}</details>')


def empty_state(message: str) -> str:
    """A visible note standing in for a figure or list that has nothing to show."""
    return f'<p class="empty">{escape(message)}</p>'


def low_res_mark(note: str | None) -> str:
    """A "low resolution" badge (its note as the tooltip), or "" for an image without a note."""
    if not note:
        return ""
    return f' <span class="lowres" title="{escape(str(note))}">low resolution</span>'


def figure(src: str, caption: str, svg: str | None = None) -> str:
    """A figure: an image file next to the page (or a data: URI) with its caption, and a link to
    the same figure as SVG (to print or zoom) when there is one."""
    link = f' <a class="svg" href="{escape(svg)}">(SVG)</a>' if svg else ""
    return (f'<figure><img src="{escape(src)}" alt="{escape(caption)}">'
            f"<figcaption>{escape(caption)}{link}</figcaption></figure>")


def figures_section(figures: Sequence[tuple[Any, str]], empty_message: str = NOTHING_SCORED,
                    notes: Sequence[str] = ()) -> str:
    """The figures, as (files, caption) pairs, or the empty-state message when there are none;
    `files` is a `FigureFiles` beside the page (its PNG shown, its SVG linked) or an image's src.
    `notes` say why a figure that could have been there is not."""
    shown = [figure(files.png.name, caption, files.svg.name) if isinstance(files, FigureFiles) else
             figure(files, caption) for files, caption in figures]
    body = "".join(shown) if figures else empty_state(empty_message)
    body += "".join(empty_state(note) for note in notes) if figures else ""
    return f'<section id="figures"><h2>Figures</h2>{body}</section>'


def section(title: str, body: str, section_id: str = "") -> str:
    """A titled part of the page; `body` is HTML."""
    ident = f' id="{escape(section_id)}"' if section_id else ""
    return f"<section{ident}><h2>{escape(title)}</h2>{body}</section>"


def worst_section(scored: Sequence[Any], worst: int, total: int, header: Sequence[str],
                  row: Callable[[Any, int], Sequence[Any]], noun: str = "images", scored_as: str = "a score") -> str:
    """The lowest-scored part of a report: the first `worst` of `scored` (ranked lowest first),
    one `row(item, position)` each (position counts from 1; text cells are HTML, escaped by the
    caller) under `header`. With nothing scored out of `total` it is an empty-state note; with
    `worst` 0 or less (no list asked for) it is "", so a scored run claims nothing.

    Examples:
        >>> rows = lambda item, position: [item["id"], item["score"]]
        >>> html = worst_section([{"id": "b", "score": 0.1}, {"id": "a", "score": 0.4}], 1, 3, ["image", "score"], rows)
        >>> "The 1 lowest-scored images" in html, "<td>b</td>" in html, "<td>a</td>" in html
        (True, True, False)
        >>> "None of the 3 pairs got a score" in worst_section([], 5, 3, ["pair"], rows, noun="pairs")
        True
        >>> worst_section([{"id": "b", "score": 0.1}], 0, 1, ["image", "score"], rows)
        ''
    """
    if scored and worst <= 0:  # --worst 0: no list asked for
        return ""
    if not scored:
        return section(f"Lowest-scored {noun}", empty_state(
            f"None of the {total} {noun} got {scored_as}, so there are no lowest-scored {noun} to show."))
    rows = [row(item, position) for position, item in enumerate(scored[:worst], 1)]
    return section(f"The {len(rows)} lowest-scored {noun}", table(header, rows, raw=True), "lowest")


def page(title: str, summary: str, parts: Sequence[str], subtitle: str = "") -> str:
    """The whole page: title, subtitle, the summary, then the other parts in order."""
    sub = f'<p class="subtitle">{escape(subtitle)}</p>' if subtitle else ""
    return "\n".join(["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
                      f"<title>{escape(title)}</title><style>{CSS}</style></head><body><main>",
                      f'<header class="report"><h1>{escape(title)}</h1>{sub}</header>',
                      summary, *parts, "</main></body></html>"])


def write_page(out_dir: str | os.PathLike, html: str) -> Path:
    """Write `report.html` at the top of `out_dir` (created if needed) through a temporary file,
    so a failure leaves the earlier page (`vlmjudge.outputs.write_text_whole`); returns its path."""
    from ..outputs import write_text_whole

    return write_text_whole(Path(out_dir) / PAGE_NAME, html)


def low_res_note(record: dict[str, Any]) -> str | None:
    """A record's low-resolution flag: `resolution_note` at its top level, in `meta` or in
    `provenance` (where the method's writers put it)."""
    for holder in (record, record.get("meta") or {}, record.get("provenance") or {}):
        if isinstance(holder, dict) and holder.get("resolution_note"):
            return str(holder["resolution_note"])
    return None


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are not None, or None when there are none."""
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


class ReportInputError(ValueError):
    """A file a report cannot read: missing, not JSON lines, or holding no record."""


def read_run(path: str | os.PathLike) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The records of a JSONL run and its manifest (`vlmjudge.outputs.read_run`: the manifest beside
    the records, or an older file's line-1 manifest, else {}). A run without records is fine (the
    report shows its empty state); a broken line is a ReportInputError naming file and line."""
    from ..outputs import JsonlError, read_run as read_records

    try:
        return read_records(path)
    except JsonlError as error:
        raise ReportInputError(str(error)) from None
