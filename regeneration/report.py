"""`vlmjudge regeneration report`: an HTML report over what `regeneration compare` wrote.

It reads the compare result (the `--out` JSON with `summary`, `pairs` and `unpaired_files`,
the `--csv` per-pair rows, or JSON lines of pair rows) and writes into `--out`: `report.html` at
the top, `summary.json`, and the figures (CLIP % and DINO % histograms, and the score against
the MLLM content rating when a judge rated the pairs). The page has the shared look of every
method's report (`vlmjudge.reports.page`): the summary first, then figures, then the
lowest-scored pairs and the files that had no partner.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Sequence

from vlmjudge.cli.report_command import add_report_command
from vlmjudge.outputs import staged_writer
from vlmjudge.reports.figures import DEFAULT_DPI, FigureFiles, check_dpi, figure_files
from vlmjudge.reports.items import input_roots, item_cell, model_name
from vlmjudge.reports.page import (
    NOTHING_SCORED, ReportInputError, figures_section, fmt_number, low_res_mark, low_res_note, mean, page, read_run,
    section, summary_table, table, worst_section, write_page,
)
from vlmjudge.stats.interval import INTERVAL_HEADING, interval_text, mean_with_interval

#: The pair columns the summary averages, and how its table names them.
MEAN_COLUMNS = {"score": "score", "clip": "CLIP %", "dino": "DINO %", "mllm_content": "MLLM content (0..1)",
                "mllm_perceptual": "MLLM perceptual (0..1)"}
#: CLIP %, DINO % and the combined score are on 0..100.
PERCENT_RANGE = (0.0, 100.0)
#: The per-pair numbers a CSV holds, read back as floats.
NUMERIC_COLUMNS = ("score", "clip", "dino", "mllm_content_rating", "mllm_perceptual_rating", "mllm_content",
                   "mllm_perceptual")


def _csv_rows(path: Path) -> list[dict[str, Any]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [dict(row) for row in csv.DictReader(fh)]
    for row in rows:
        for key in NUMERIC_COLUMNS:
            if key in row:
                row[key] = float(row[key]) if row[key] not in ("", None) else None
    return rows


def read_compare(path: str | os.PathLike) -> dict[str, Any]:
    """A compare result as {"pairs", "unpaired_files", "manifest"}: from its JSON, CSV or JSON-lines
    file (only JSON lines have a manifest beside them; the others get {})."""
    file = Path(path)
    if not file.is_file():
        raise ReportInputError(f"no such file: {file}")
    if file.suffix == ".csv":
        return {"pairs": _csv_rows(file), "unpaired_files": {}, "manifest": {}}
    if file.suffix == ".json":
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ReportInputError(f"{file}: not JSON ({err.msg})") from None
        if not isinstance(data, dict) or not isinstance(data.get("pairs"), list):
            raise ReportInputError(f"{file}: expected the `regeneration compare --out` JSON, with a 'pairs' list")
        return {"pairs": data["pairs"], "unpaired_files": data.get("unpaired_files") or {}, "manifest": {}}
    rows, manifest = read_run(file)  # compare --out, or the distributed runner's records
    unpaired = manifest.get("unpaired_files") if isinstance(manifest.get("unpaired_files"), dict) else {}
    return {"pairs": [flat_pair(row, position) for position, row in enumerate(rows)], "unpaired_files": unpaired,
            "manifest": manifest}


def flat_pair(row: dict[str, Any], position: int) -> dict[str, Any]:
    """A pair row in compare's flat names, also from a scored record (`python -m vlmjudge.distributed
    regeneration`), whose MLLM ratings sit under `mllm` and whose id may be absent (its position)."""
    flat = {"id": row.get("id", position), **row}
    mllm = flat.pop("mllm", None)
    if isinstance(mllm, dict):
        for name in ("content", "perceptual"):
            flat.setdefault(f"mllm_{name}_rating", mllm.get(name))
            flat.setdefault(f"mllm_{name}", mllm.get(f"{name}_norm"))
    return flat


def summarize_pairs(pairs: Sequence[dict[str, Any]], unpaired: dict[str, list[str]]) -> dict[str, Any]:
    """Counts and means over the pairs: score, CLIP %, DINO %, MLLM ratings (0..1), each also with
    its 95% interval and n under `intervals`; flags."""
    scored = [p for p in pairs if p.get("score") is not None or p.get("clip") is not None]
    return {"n_pairs": len(pairs), "n_scored": len(scored),
            **{f"mean_{k}": mean(p.get(k) for p in pairs) for k in ("score", "clip", "dino")},
            "mean_mllm_content": mean(p.get("mllm_content") for p in pairs),
            "mean_mllm_perceptual": mean(p.get("mllm_perceptual") for p in pairs),
            "intervals": {k: mean_with_interval(p.get(k) for p in pairs) for k in MEAN_COLUMNS},
            "n_unpaired": sum(len(v) for v in unpaired.values()),
            "n_low_resolution": sum(low_res_note(p) is not None for p in pairs)}


def _rank_key(pair: dict[str, Any]) -> float:
    value = pair.get("score") if pair.get("score") is not None else pair.get("clip")
    return float(value) if value is not None else float("inf")


def item_name(pair: dict[str, Any]) -> str:
    """The pair a row is about, as the report names it and finds its two images by."""
    return str(pair.get("id"))


def _lowest(pairs: Sequence[dict[str, Any]], worst: int, roots: dict[str, list[Path]]) -> str:
    """The lowest-scored pairs, each with the thumbnails of its reference and its regeneration."""
    scored = sorted((p for p in pairs if p.get("score") is not None or p.get("clip") is not None), key=_rank_key)
    header = ["reference", "regeneration", "score", "CLIP %", "DINO %", "MLLM content (1-5)",
              "MLLM perceptual (1-5)"]
    return worst_section(scored, worst, len(pairs), header, lambda p, _: _row(p, roots), noun="pairs")


def _row(p: dict[str, Any], roots: dict[str, list[Path]]) -> list[str]:
    """One lowest-scored pair: both images (the reference with the low-resolution mark), then its numbers."""
    name = item_name(p)
    return [item_cell(name, roots["refs"]) + low_res_mark(low_res_note(p)), item_cell(name, roots["gens"]),
            fmt_number(p.get("score")), fmt_number(p.get("clip")), fmt_number(p.get("dino")),
            fmt_number(p.get("mllm_content_rating")), fmt_number(p.get("mllm_perceptual_rating"))]


def pair_roots(manifest: dict[str, Any], result: str | os.PathLike) -> dict[str, list[Path]]:
    """Where each side's images are looked for: the folder compare read (`refs`, `gens` in the
    manifest), then beside the result."""
    return {side: input_roots({side: manifest.get(side)}, result) for side in ("refs", "gens")}


def _unpaired(unpaired: dict[str, list[str]]) -> str:
    rows = [[side.replace("_", " "), name] for side, names in unpaired.items() for name in names]
    if not rows:
        return ""
    return section(f"{len(rows)} unpaired files (left out)", table(["folder", "file"], rows), "unpaired")


def _plot_score_vs_content(pairs: Sequence[dict[str, Any]], path: Path, dpi: int) -> str:
    """Score against the MLLM content rating (PNG at `dpi`, and SVG); the y axis covers every score,
    and the returned note (also in the title) says when a score lies outside 0-100."""
    from vlmjudge.reports.figures import covering_range, new_figure, range_note, save_figure

    points = [(p["mllm_content_rating"], p["score"]) for p in pairs
              if p.get("mllm_content_rating") is not None and p.get("score") is not None]
    fig = new_figure(6, 4)
    ax = fig.subplots()
    ax.scatter([x for x, _ in points], [y for _, y in points], color="#4C72B0")
    ax.set_xlim(0.5, 5.5)
    scores = [y for _, y in points]
    ax.set_ylim(*covering_range(scores, PERCENT_RANGE, margin=0.04))
    ax.set_xlabel("MLLM content rating (1-5)")
    ax.set_ylabel("score (%, mean of CLIP % and DINO %)")
    note = range_note(scores, PERCENT_RANGE)
    title = "Similarity score against the MLLM content rating"
    ax.set_title(f"{title}\n{note}" if note else title, fontsize=10)
    save_figure(fig, path, dpi)
    return note


@staged_writer
def write_report(result: str | os.PathLike, out_dir: str | os.PathLike, worst: int = 20,
                 dpi: int = DEFAULT_DPI) -> list[Path]:
    """Write the report of one compare result into `out_dir`; returns the written paths
    (summary.json, the figures drawn as PNG at `dpi` and as SVG, report.html last), all or none of
    them (`staged_writer`: a failure leaves the earlier report)."""
    from vlmjudge.reports.figures import histogram

    check_dpi(dpi)
    data = read_compare(result)
    pairs, unpaired = data["pairs"], data["unpaired_files"]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize_pairs(pairs, unpaired)
    summary_json = out / "summary.json"
    summary_json.write_text(json.dumps({"result": Path(result).name, "summary": summary}, indent=2) + "\n",
                            encoding="utf-8")
    figures: list[tuple[FigureFiles, str]] = []
    if summary["n_scored"]:
        files = figure_files(out / "similarity_histogram.png")
        clipped = histogram({k: [p[key] for p in pairs if p.get(key) is not None]
                             for k, key in (("CLIP %", "clip"), ("DINO %", "dino"))},
                            files.png, "image-image similarity (%)",
                            f"CLIP % and DINO % over {summary['n_scored']} pairs", PERCENT_RANGE, stacked=False,
                            dpi=dpi, ylabel="pairs")
        figures.append((files, "CLIP % and DINO % per pair" + (f": {clipped}" if clipped else "")))
    if summary["mean_mllm_content"] is not None:
        files = figure_files(out / "score_vs_mllm_content.png")
        clipped = _plot_score_vs_content(pairs, files.png, dpi)
        figures.append((files, "Similarity score against the MLLM content rating"
                        + (f": {clipped}" if clipped else "")))
    written: list[Path] = [summary_json, *(path for files, _ in figures for path in files)]
    head = ["result", "judge model", "pairs", "scored",
            *[f"mean {name} {INTERVAL_HEADING}" for name in MEAN_COLUMNS.values()], "unpaired files", "low resolution"]
    row = [Path(result).name, model_name(data["manifest"]), summary["n_pairs"], summary["n_scored"],
           *[interval_text(summary["intervals"][key], fmt_number) for key in MEAN_COLUMNS],
           summary["n_unpaired"], summary["n_low_resolution"]]
    html = page("Image Regeneration report", summary_table(head, [row]),
                [figures_section(figures, NOTHING_SCORED.replace("image", "pair")),
                 _lowest(pairs, worst, pair_roots(data["manifest"], result)), _unpaired(unpaired)],
                subtitle=f"from {Path(result).name}, MLLM judge: {model_name(data['manifest'])}")
    written.append(write_page(out, html))
    return written


def configure_report(commands: Any) -> None:
    """Add report to the vlmjudge regeneration sub-commands."""
    add_report_command(commands, write_report, source="result", items="pairs", errors=(KeyError,),
                       source_help="the --out JSON lines (or --csv, or an older --out .json) of regeneration "
                                   "compare, or the records of python -m vlmjudge.distributed regeneration",
                       help="an HTML report (summary, figures, lowest-scored pairs) of a compare run",
                       description="Read what regeneration compare wrote (its --out JSON lines with the manifest "
                       "beside them, its --csv, or an older --out JSON) and write report.html, summary.json and the "
                       "figures into --out.")
