"""Reports over saved TerraVis runs: what `vlmjudge terravis report` computes and writes.

Runs (JSONL files from `terravis score`) are grouped by evaluator (judge model, variant,
weights and prompt pack from each file's manifest); files of one evaluator are joined.
Per evaluator: the summary, per-T2I-model means and ranking, violation shares by level and
type (paper Figures A1-A2), and with several evaluators their ranking agreement (Table
A4). With human ratings: agreement (pooled and per model), detection precision/recall,
the alpha sweep (Table A3), the check ablations (Table A2) and the style split.
"""
from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from vlmjudge.outputs import staged_writer, write_text_whole
from vlmjudge.reports.figures import DEFAULT_DPI, check_dpi
from vlmjudge.stats.interval import mean_with_interval

from . import evaluation
from .core import METHOD_VERSION, summarize
from .records import ImageRecord, load_records

GroupBy = Literal["auto", "field", "folder"]
NA_WORDS = {"", "na", "n/a", "none", "null", "nan"}


class ReportError(ValueError):
    """Input a report cannot be built from: unreadable runs, clashing records, bad ratings."""


@dataclass
class Evaluator:
    """One evaluator's joined runs: a label, its manifest, records, and the source files."""

    label: str
    manifest: dict[str, Any]
    records: list[ImageRecord] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


@dataclass
class HumanData:
    """Human data by image id: ratings (each annotator's, None for N/A), optional
    has-violation labels and style classes, and where the labels came from."""

    ratings: dict[str, list[float | None]]
    labels: dict[str, list[bool | None]]
    styles: dict[str, str]
    label_source: str | None = None

#: Why detection precision/recall is missing from a report whose human data has no labels.
NO_LABELS = ("detection precision/recall skipped: the human CSV has no has_violation column (pass "
             "--violation-below RATING to label an image as violating when its rating is below RATING)")


def evaluator_label(manifest: Mapping[str, Any] | None) -> str:
    """A short name of what judged a run: model, and the variant/weights/pack when not default."""
    if not manifest:
        return "unknown"
    parts = [str(manifest.get("model") or manifest.get("backend") or "unknown")]
    if manifest.get("variant", "workflow") != "workflow":
        parts.append(str(manifest["variant"]))
    if (manifest.get("lam", 1.0), manifest.get("alpha", 0.5)) != (1.0, 0.5):
        parts.append(f"lam={manifest.get('lam')},alpha={manifest.get('alpha')}")
    if manifest.get("pack_version") not in (None, "default-v1"):
        parts.append(str(manifest["pack_version"]))
    if manifest.get("method_version") not in (None, METHOD_VERSION):  # read under other rules: kept apart
        parts.append(f"method-v{manifest['method_version']}")
    return " ".join(parts)


def load_runs(paths: Sequence[str | os.PathLike]) -> list[Evaluator]:
    """Read runs and join those of the same evaluator; an image id twice in one evaluator is an error."""
    if not paths:
        raise ReportError("no result files given")
    evaluators: dict[str, Evaluator] = {}
    for path in paths:
        records, manifest = load_records(path)
        _keep_top_level_notes(path, records)
        if not records:
            raise ReportError(f"{path}: no records")
        label = evaluator_label(manifest)
        ev = evaluators.setdefault(label, Evaluator(label, dict(manifest or {})))
        seen = {r.id for r in ev.records}
        clash = [r.id for r in records if r.id in seen]
        if clash:
            raise ReportError(f"{path}: images already in another run of evaluator {label!r}: {clash[:5]}")
        ev.records.extend(records)
        ev.sources.append(os.fspath(path))
    return list(evaluators.values())


#: The T2I "model" of images that name none (no `model` field, no parent folder) under --group-by auto.
UNGROUPED = "all images"


def _keep_top_level_notes(path: str | os.PathLike, records: Sequence[ImageRecord]) -> None:
    """Move a record line's top-level `resolution_note` (how `python -m vlmjudge.distributed` flags a
    small image) into the record's meta, where `terravis score` puts it (in memory only)."""
    from vlmjudge.outputs import iter_jsonl

    notes = [(str(row["id"]), str(row["resolution_note"])) for _, row in iter_jsonl(path)
             if "id" in row and row.get("resolution_note")]
    by_id = dict(notes)
    for record in records:
        if record.id in by_id and not record.meta.get("resolution_note"):
            record.meta["resolution_note"] = by_id[record.id]


def model_of(record: ImageRecord, group_by: GroupBy = "auto") -> str:
    """The T2I model of an image: its `model` field, or its folder's name. Under "auto" that is the
    folder within the input root its id names (`UNGROUPED` when it has none, so images given straight
    from one folder are not grouped under that folder's name); under "folder", the recorded path's."""
    if group_by in ("field", "auto") and record.meta.get("model") is not None:
        return str(record.meta["model"])
    if group_by == "field":
        raise ReportError(f"record {record.id!r} has no 'model' field (use --group-by folder, or score "
                          "with --t2i-model)")
    if group_by not in ("auto", "folder"):
        raise ReportError(f"group_by must be auto, field or folder, got {group_by!r}")
    path = record.id if group_by == "auto" else (record.meta.get("path") or record.id)
    parent = Path(str(path)).parent.name
    if not parent and group_by == "auto":  # e.g. `python -m vlmjudge.distributed` ids: one group
        return UNGROUPED
    if not parent:
        raise ReportError(f"record {record.id!r} has no parent folder to name its model")
    return parent


def per_model(records: Sequence[ImageRecord], models: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """`summarize` of each T2I model's records."""
    groups: dict[str, list[ImageRecord]] = {}
    for r in records:
        groups.setdefault(models[r.id], []).append(r)
    return {m: summarize(rs) for m, rs in sorted(groups.items())}


def image_models(ev: Evaluator, group_by: GroupBy = "auto") -> dict[str, str]:
    """image id -> T2I model for one evaluator's records."""
    return {r.id: model_of(r, group_by) for r in ev.records}


def evaluator_report(ev: Evaluator, models: Mapping[str, str], human: HumanData | None) -> dict[str, Any]:
    """Everything the report shows for one evaluator, as plain data (the mean score's 95% interval
    and n under `score_interval`, N/A images left out as the mean leaves them)."""
    means = evaluation.model_means(ev.records, models)
    out: dict[str, Any] = {
        "label": ev.label, "sources": ev.sources, "manifest": ev.manifest, "summary": summarize(ev.records),
        "score_interval": mean_with_interval(r.score for r in ev.records),
        "models": per_model(ev.records, models), "ranking": evaluation.model_ranking(means), "model_means": means,
    }
    if human is not None:
        out["human"] = human_analyses(ev.records, models, human)
    return out


def human_analyses(records: Sequence[ImageRecord], models: Mapping[str, str], human: HumanData) -> dict[str, Any]:
    """The analyses against human data, over the records that have human ratings."""
    rated = [r for r in records if r.id in human.ratings]
    if not rated:
        raise ReportError("no record's id appears in the human ratings file's image_id column")
    out: dict[str, Any] = {"n_matched": len(rated), "n_unmatched": len(records) - len(rated)}
    out["agreement"] = evaluation.agreement(rated, human.ratings, {r.id: models[r.id] for r in rated})
    labelled = [r for r in rated if r.id in human.labels]
    if labelled:
        out["detection"] = {**evaluation.detection_agreement(labelled, human.labels), "label_source": human.label_source}
    else:
        out["detection_skipped"] = NO_LABELS if not human.labels else \
            "detection precision/recall skipped: no rated record has a human has_violation label"
    if all(r.rating is None for r in rated):  # the workflow's checks can be re-scored
        out["alpha_sweep"] = evaluation.alpha_sweep(rated, human.ratings)
        out["check_ablation"] = evaluation.check_ablation(rated, human.ratings)
    styled = [r for r in rated if r.id in human.styles]
    if styled:
        out["style_split"] = evaluation.style_split(styled, human.ratings, human.styles)
    return out


def read_human_csv(path: str | os.PathLike, violation_below: float | None = None) -> HumanData:
    """Human data from a CSV: `image_id` and `rating` (1-5; empty/NA = N/A), one row per
    annotator (or one row holding their mean); optional `has_violation` (1/0/yes/no) and
    `style` columns. With `violation_below`, an annotator's "has a violation" label is
    `rating < violation_below` (N/A stays unlabelled) and any has_violation column is ignored."""
    if violation_below is not None and not 1 < violation_below <= 5:
        raise ReportError(f"violation_below must be in (1, 5], got {violation_below}")
    ratings: dict[str, list[float | None]] = {}
    labels: dict[str, list[bool | None]] = {}
    styles: dict[str, str] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        columns = set(reader.fieldnames or ())
        if not {"image_id", "rating"} <= columns:
            raise ReportError(f"{path}: needs columns image_id and rating, has {sorted(columns)}")
        for lineno, row in enumerate(reader, 2):
            key = (row["image_id"] or "").strip()
            if not key:
                raise ReportError(f"{path}:{lineno}: empty image_id")
            rating = _rating(row["rating"], f"{path}:{lineno}")
            ratings.setdefault(key, []).append(rating)
            if violation_below is not None:
                labels.setdefault(key, []).append(None if rating is None else rating < violation_below)
            elif "has_violation" in columns:
                labels.setdefault(key, []).append(_flag(row["has_violation"], f"{path}:{lineno}"))
            if (row.get("style") or "").strip():
                styles[key] = row["style"].strip()
    if not ratings:
        raise ReportError(f"{path}: no ratings")
    labels = {k: v for k, v in labels.items() if any(x is not None for x in v)}
    source = f"rating < {violation_below:g}" if violation_below is not None else \
        ("has_violation column" if "has_violation" in columns else None)
    return HumanData(ratings, labels, styles, source)


def classified_styles(evaluators: Sequence[Evaluator], classifier: Callable[[Sequence[Any]], Sequence[str]]
                      ) -> dict[str, str]:
    """Style labels by image id from a classifier (SigLIP in the paper) over the images the records'
    `meta.path` names; images whose file is missing are left out."""
    from PIL import Image

    paths: dict[str, str] = {}
    for ev in evaluators:
        for r in ev.records:
            if r.meta.get("path") and os.path.isfile(str(r.meta["path"])):
                paths.setdefault(r.id, str(r.meta["path"]))
    if not paths:
        raise ReportError("style classification needs records whose meta.path names an existing image")
    ids = sorted(paths)
    images = []
    for image_id in ids:
        with Image.open(paths[image_id]) as img:
            images.append(img.convert("RGB"))
    return evaluation.classify_styles(images, ids, classifier)


def _rating(text: str | None, where: str) -> float | None:
    text = (text or "").strip()
    if text.lower() in NA_WORDS:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ReportError(f"{where}: rating {text!r} is neither a number nor NA") from None
    if not 1 <= value <= 5:
        raise ReportError(f"{where}: rating {value} is outside 1..5")
    return value


def _flag(text: str | None, where: str) -> bool | None:
    text = (text or "").strip().lower()
    if text in NA_WORDS:
        return None
    if text in ("1", "yes", "true", "y"):
        return True
    if text in ("0", "no", "false", "n"):
        return False
    raise ReportError(f"{where}: has_violation {text!r} is not 1/0/yes/no")


def build_report(evaluators: Sequence[Evaluator], group_by: GroupBy = "auto",
                 human: str | os.PathLike | HumanData | None = None, violation_below: float | None = None,
                 style_classifier: Callable[[Sequence[Any]], Sequence[str]] | None = None) -> dict[str, Any]:
    """The report's data: one entry per evaluator, and their ranking agreement when several.
    `violation_below` labels human "has a violation" from the ratings (`read_human_csv`);
    `style_classifier` (images -> labels) replaces the CSV's style column for the style split."""
    human_data = read_human_csv(human, violation_below) if isinstance(human, (str, os.PathLike)) else human
    if human_data is not None and style_classifier is not None:
        human_data.styles = classified_styles(evaluators, style_classifier)
    reports = [evaluator_report(ev, image_models(ev, group_by), human_data) for ev in evaluators]
    out: dict[str, Any] = {"evaluators": reports}
    if len(reports) > 1:
        agreement = evaluation.ranking_agreement({r["label"]: r["model_means"] for r in reports})
        out["ranking_agreement"] = {"pairs": [{"a": a, "b": b, "kendall_tau": tau}
                                              for (a, b), tau in agreement["pairs"].items()],
                                    "mean": agreement["mean"]}
    return out


def worst_records(records: Iterable[ImageRecord], n: int) -> list[ImageRecord]:
    """The n lowest-scored images (more violations first among equal scores)."""
    scored = [r for r in records if r.score is not None]
    return sorted(scored, key=lambda r: (r.score, -(r.n_major + r.n_minor), r.id))[:max(n, 0)]


def json_safe(value: Any) -> Any:
    """NaN and inf -> None, tuple keys -> strings: strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {(" vs ".join(map(str, k)) if isinstance(k, tuple) else str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


@staged_writer
def write_report(paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike, group_by: GroupBy = "auto",
                 human: str | os.PathLike | None = None, worst: int = 20, violation_below: float | None = None,
                 style_classifier: Callable[[Sequence[Any]], Sequence[str]] | None = None,
                 dpi: int = DEFAULT_DPI) -> list[Path]:
    """Write summary.json, ranking.csv, the figures (PNG at `dpi`, and SVG) and report.html (at the
    top of `out_dir`), all or none of them (`staged_writer`: a failure leaves the earlier report);
    returns the paths. A figure with nothing to show is left out and the page says why: the
    histogram needs a scored image, the violation shares a detected violation."""
    from vlmjudge.reports.items import input_roots
    from vlmjudge.reports.page import NOTHING_SCORED, write_page

    from .figures import plot_level_shares, plot_score_histogram, plot_type_shares
    from .report_html import render_html

    check_dpi(dpi)
    evaluators = load_runs(paths)
    data = build_report(evaluators, group_by, human, violation_below, style_classifier)
    models = {ev.label: image_models(ev, group_by) for ev in evaluators}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary_json, ranking_csv = out / "summary.json", out / "ranking.csv"
    write_text_whole(summary_json, json.dumps(json_safe(data), indent=2, ensure_ascii=False) + "\n")
    write_ranking_csv(data, ranking_csv)
    figures: dict[str, Any] = {}
    any_scored = any(rep["summary"]["n_scored"] for rep in data["evaluators"])
    any_violation = any(rep["summary"]["n_major"] + rep["summary"]["n_minor"] for rep in data["evaluators"])
    if any_violation:
        figures["levels"] = plot_level_shares(data["evaluators"], out / "violations_by_level.png", dpi)
        figures["types"] = plot_type_shares(data["evaluators"], out / "violations_by_type.png", dpi)
    if any_scored:
        figures["histogram"] = plot_score_histogram(evaluators, models, out / "score_histogram.png", dpi=dpi)
    note = NOTHING_SCORED if not any_scored else "No violation was detected, so there are no violation shares to plot."
    worst_by_label = {ev.label: worst_records(ev.records, worst) for ev in evaluators}
    low_res = {ev.label: sum(bool(r.meta.get("resolution_note")) for r in ev.records) for ev in evaluators}
    search = list(dict.fromkeys(root for ev in evaluators for source in ev.sources
                                for root in input_roots(ev.manifest, source)))
    html = write_page(out, render_html(data, figures, worst_by_label, models, search, low_res, note))
    return [summary_json, ranking_csv, *(path for files in figures.values() for path in files), html]


def write_ranking_csv(data: Mapping[str, Any], path: Path) -> None:
    """One row per (evaluator, T2I model), best first."""
    # an older run's id may hold a lone surrogate (a non-UTF-8 file name): written as its escape
    with open(path, "w", newline="", encoding="utf-8", errors="backslashreplace") as fh:
        writer = csv.writer(fh)
        writer.writerow(["evaluator", "rank", "model", "mean_score", "n_images", "n_scored", "na_rate"])
        for rep in data["evaluators"]:
            for row in rep["ranking"]:
                m = rep["models"][row["model"]]
                writer.writerow([rep["label"], row["rank"], row["model"], f"{row['mean_score']:.6f}",
                                 m["n_images"], m["n_scored"], f"{m['na_rate']:.4f}"])
            for model, m in rep["models"].items():  # models without a scored image: no rank
                if model not in rep["model_means"]:
                    writer.writerow([rep["label"], "", model, "", m["n_images"], m["n_scored"], f"{m['na_rate']:.4f}"])


def report_notes(summary_json: Path) -> list[str]:
    """What the report had to leave out, said once per reason (e.g. detection without labels)."""
    data = json.loads(summary_json.read_text(encoding="utf-8"))
    notes = [ev["human"]["detection_skipped"] for ev in data["evaluators"]
             if "detection_skipped" in ev.get("human", {})]
    return list(dict.fromkeys(notes))
