"""Saved and released runs: evaluation reports in the layout of the public release (VIEScoreTwo
``run_eval.py`` and the metric part of ``dev_eval.py``), and the files a run is read from,
matched by image id (predictions, references, prompts; ids of earlier releases had no suffix).

Following the release's rules lets numbers compare one to one with its reports; the one
exception, kept from the paper, is that a failed parse is not a correct clean image
(``clean_failures_count=True`` restores the release's count).

docs/methods/viescore2.md, "Evaluation rules", lists every rule.
"""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from vlmjudge.images import IMAGE_SUFFIXES
from vlmjudge.outputs import iter_jsonl

from .evaluation import MIN_PAIRS, Reference, category_prediction, pearson, srcc
from .grid import CATEGORIES, DEFAULT_N, CategoryGrids, Grid, ParsedOutput, union_of
from .parsing import parse_output

CLEAN_SOURCES = ("COCO-real",)
DIGITS = 4


def ratios(tp: int, fp: int, fn: int, all_empty: float = 1.0) -> tuple[float, float, float]:
    """(precision, recall, F1) from counts: ``all_empty`` (run_eval 1.0, dev_eval 0.0) each when
    tp + fp + fn = 0, 0.0 for an undefined ratio."""
    if tp + fp + fn == 0:
        return all_empty, all_empty, all_empty
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def confusion(pred: set, truth: set, n: int) -> dict[str, int]:
    """tp, fp, fn, tn of two cell sets on the n x n grid."""
    tp, fp, fn = len(pred & truth), len(pred - truth), len(truth - pred)
    return {"tp": tp, "fp": fp, "fn": fn, "tn": n * n - tp - fp - fn}


def _mean(values: Sequence[float], digits: int) -> float | None:
    return round(sum(values) / len(values), digits) if values else None


def example_report(parsed: ParsedOutput, reference: Reference, n: int = DEFAULT_N) -> dict[str, Any]:
    """One example's row: parse flag, predicted scores, and (with localization truth) confusion counts."""
    row: dict[str, Any] = {"grid_parsed": parsed.grid_parsed, "pred_score": parsed.overall,
                           "pred_pq": parsed.scores.get("pq"), "pred_sc": parsed.scores.get("sc")}
    keys = ("grid_iou", "cell_tp", "cell_fp", "cell_fn", "cell_tn", "cell_precision", "cell_recall", "cell_f1",
            "channel_confusion", "coverage_confusion")
    row.update(dict.fromkeys(keys))
    truth = reference.localization
    if truth is None:
        return row
    pred = parsed.union.cells if parsed.union is not None else frozenset()
    counts = confusion(set(pred), set(union_of(truth).cells), n)
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    precision, recall, f1 = ratios(tp, fp, fn)
    iou = 0.0 if not parsed.grid_parsed else tp / (tp + fp + fn) if tp + fp + fn else 1.0
    row.update({"grid_iou": round(iou, DIGITS),
                "cell_tp": tp, "cell_fp": fp, "cell_fn": fn, "cell_tn": counts["tn"],
                "cell_precision": round(precision, DIGITS), "cell_recall": round(recall, DIGITS),
                "cell_f1": round(f1, DIGITS)})
    if isinstance(truth, CategoryGrids):
        predicted = {name: category_prediction(parsed, name) for name in CATEGORIES}
        row["channel_confusion"] = {name: confusion(set(predicted[name].cells) if predicted[name] else set(),
                                                    set(grid.cells), n) for name, grid in truth.items()}
        marks = set().union(*(g.marks for g in predicted.values() if g is not None))
        row["coverage_confusion"] = confusion(marks, set(truth.union().marks), n)
    return row


def _pooled(rows: Sequence[Mapping[str, Any]], key, prefix: str) -> dict[str, float]:
    tp = sum(key(r)["tp"] for r in rows)
    fp = sum(key(r)["fp"] for r in rows)
    fn = sum(key(r)["fn"] for r in rows)
    p, r, f = ratios(tp, fp, fn)
    return {f"{prefix}_precision_micro": round(p, DIGITS), f"{prefix}_recall_micro": round(r, DIGITS),
            f"{prefix}_f1_micro": round(f, DIGITS)}


def correlation_block(preds: Sequence[float | None], targets: Sequence[float | None],
                      sources: Sequence[str | None] | None = None, prefix: str = "score",
                      exclude_sources: Sequence[str] = CLEAN_SOURCES, min_pairs: int = MIN_PAIRS,
                      digits: int | None = DIGITS) -> dict[str, Any]:
    """``<prefix>_n`` valid pairs (both present, source not excluded) and the Pearson and Spearman
    correlations (rounded; None below ``min_pairs`` pairs or without spread)."""
    sources = list(sources) if sources is not None else [None] * len(preds)
    keep = [i for i, s in enumerate(sources) if s not in exclude_sources]
    p, t = [preds[i] for i in keep], [targets[i] for i in keep]
    spearman, linear = srcc(p, t, min_pairs), pearson(p, t, min_pairs)

    def rounded(value: float | None) -> float | None:
        return value if value is None or digits is None else round(value, digits)
    return {f"{prefix}_n": spearman.n_valid, f"{prefix}_pearson": rounded(linear.value),
            f"{prefix}_spearman": rounded(spearman.value)}


def suite_report(texts: Sequence[str], references: Sequence[Reference], n: int = DEFAULT_N,
                 clean_failures_count: bool = False, exclude_sources: Sequence[str] = CLEAN_SOURCES
                 ) -> dict[str, Any]:
    """``{"rows": [...], "summary": {...}}`` in the release's layout; keys the release leaves out are absent.

    References carry scores on 0..10 and the example's ``source``. A text that is None (the judge gave
    no answer) counts among ``errors`` and is read as an empty, unparseable answer.
    """
    if len(texts) != len(references):
        raise ValueError(f"{len(texts)} predictions but {len(references)} references")
    errors = sum(t is None for t in texts)
    parsed = [parse_output("" if t is None else t, n=n) for t in texts]
    rows = [example_report(p, r, n) for p, r in zip(parsed, references)]
    loc = [(row, ref) for row, ref in zip(rows, references) if ref.localization is not None]
    problem = [row for row, ref in loc if not union_of(ref.localization).is_empty]
    parse_rate = round(100.0 * sum(p.grid_parsed for p in parsed) / len(parsed), 1) if parsed else 0.0
    summary: dict[str, Any] = {
        "total_samples": len(texts), "scored_samples": len(texts) - errors, "errors": errors,
        "per_source_counts": dict(Counter(str(r.source) for r in references)), "n_localization_gt": len(loc)}
    summary["avg_grid_iou"] = _mean([row["grid_iou"] for row, _ in loc], DIGITS)
    summary["avg_grid_iou_problem_only"] = _mean([row["grid_iou"] for row in problem], DIGITS)
    summary.update(_pooled([row for row, _ in loc], lambda r: {k: r[f"cell_{k}"] for k in ("tp", "fp", "fn")},
                           "cell"))
    summary["cell_f1_macro_problem"] = _mean([row["cell_f1"] for row in problem], DIGITS)
    summary["n_problem_gt"] = len(problem)
    summary["clean_correct"] = sum(
        1 for (row, ref), p in zip(loc, [p for p, r in zip(parsed, references) if r.localization is not None])
        if union_of(ref.localization).is_empty and row["cell_tp"] + row["cell_fp"] + row["cell_fn"] == 0
        and (clean_failures_count or p.grid_parsed))
    summary["patch_parse_rate"] = summary["grid_parse_rate"] = parse_rate
    channel_rows = [row for row in rows if row["channel_confusion"] is not None]
    if channel_rows:
        summary["channel_samples"] = len(channel_rows)
        for name in CATEGORIES:
            summary.update(_pooled(channel_rows, lambda r, name=name: r["channel_confusion"][name], name))
        summary["coverage_samples"] = len(channel_rows)
        summary.update(_pooled(channel_rows, lambda r: r["coverage_confusion"], "coverage"))
    gt_scores = [ref.scores["score"] for ref in references if "score" in ref.scores]
    summary["avg_gt_score"] = _mean(gt_scores, 2)
    sources = [ref.source for ref in references]
    block = correlation_block([row["pred_score"] for row in rows], [ref.scores.get("score") for ref in references],
                              sources, "score", exclude_sources)
    summary["score_pred_n"] = block.pop("score_n")
    summary.update(block)
    for axis in ("pq", "sc"):  # the release reports an axis only when its correlation is defined
        axis_block = correlation_block([row[f"pred_{axis}"] for row in rows],
                                       [ref.scores.get(axis) for ref in references], sources, axis, exclude_sources)
        if axis_block[f"{axis}_spearman"] is not None:
            summary.update(axis_block)
    return {"rows": rows, "summary": {k: v for k, v in summary.items() if v is not None}}


def _cells(pairs) -> frozenset:
    return frozenset((int(r), int(c)) for r, c in pairs or ())


def reference_from_release(row: Mapping[str, Any], n: int = DEFAULT_N) -> Reference:
    """A `Reference` from one row of the release's evaluation data: ``gt_cells``, ``has_visual_gt``,
    ``gt_channels`` (per category ``problem`` and ``major`` cells), ``source``, ``gt_score`` and
    ``gt_axes`` on [0, 1] (scaled to 0..10 here, as the release scales them)."""
    channels = row.get("gt_channels")
    localization = None
    if channels:
        grids = {name: Grid(_cells(channels.get(name, {}).get("problem")),
                            _cells(channels.get(name, {}).get("major")), n) for name in CATEGORIES}
        localization = CategoryGrids(grids["artifact"], grids["misalign"])
    elif row.get("has_visual_gt") or row.get("source") in CLEAN_SOURCES:
        localization = Grid(_cells(row.get("gt_cells")), frozenset(), n)
    scores = {}
    axes = list(row.get("gt_axes") or ()) + [None, None]
    for key, value in (("score", row.get("gt_score")), ("pq", axes[0]), ("sc", axes[1])):
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            scores[key] = float(value) * 10.0
    return Reference(localization, scores, None, row.get("source"))


def development_report(texts: Sequence[str], truths: Sequence[Grid], sources: Sequence[str],
                       clean: Sequence[bool], n: int = DEFAULT_N) -> dict[str, Any]:
    """The development-set report of the release's ``dev_eval.py``: micro P/R/F1 over every example
    (0.0 when a ratio is undefined or all counts are 0, unlike `suite_report`), the mean IoU over
    non-empty truths (``iou_p``), false alarms on the examples flagged ``clean`` per source (a failed
    parse flags nothing), per-source F1 and the parse rate (%)."""
    if not len(texts) == len(truths) == len(sources) == len(clean):
        raise ValueError("development_report needs equally long sequences")
    rows, ious = [], []
    per_source: dict[str, list[int]] = {}
    false_alarms: dict[str, dict[str, int]] = {}
    for text, truth, source, is_clean in zip(texts, truths, sources, clean):
        parsed = parse_output(text, n=n)
        pred = set(parsed.union.cells) if parsed.union is not None else set()
        counts = confusion(pred, set(truth.cells), n)
        rows.append({"tp": counts["tp"], "fp": counts["fp"], "fn": counts["fn"], "parsed": parsed.grid_parsed})
        if not truth.is_empty:
            ious.append(counts["tp"] / (counts["tp"] + counts["fp"] + counts["fn"]))
        totals = per_source.setdefault(source, [0, 0, 0])
        for i, key in enumerate(("tp", "fp", "fn")):
            totals[i] += counts[key]
        if is_clean:
            seen = false_alarms.setdefault(source, {"n_clean": 0, "flagged": 0})
            seen["n_clean"] += 1
            seen["flagged"] += bool(pred)
    tp, fp, fn = (sum(r[k] for r in rows) for k in ("tp", "fp", "fn"))
    precision, recall, f1 = ratios(tp, fp, fn, all_empty=0.0)
    summary = {"n": len(rows), "precision": round(precision, DIGITS), "recall": round(recall, DIGITS),
               "f1": round(f1, DIGITS), "iou_p": _mean(ious, DIGITS), "clean_false_positive_rate": false_alarms,
               "per_source_f1": {s: round(ratios(*c, all_empty=0.0)[2], DIGITS) for s, c in per_source.items()},
               "parse_rate": round(100.0 * sum(r["parsed"] for r in rows) / len(rows), 1) if rows else 0.0}
    return {"summary": summary, "rows": rows}


# -- files matched by image id ------------------------------------------------------------
def id_lines(path: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSONL file whose every line has an 'id' (the one reader, vlmjudge.outputs)."""
    for number, record in iter_jsonl(path):
        if "id" not in record:
            raise ValueError(f"{path}:{number}: each line must be an object with an 'id'")
        yield number, record


def without_suffix(image_id: str) -> str:
    """An image id without its image suffix ("sub/cat.png" -> "sub/cat"): how prompt and reference
    files written for the ids of earlier releases (file names without suffix) still match."""
    path = Path(image_id)
    return path.with_suffix("").as_posix() if path.suffix.lower() in IMAGE_SUFFIXES else image_id


def match_id(image_id: str, keys: dict[str, Any]) -> str | None:
    """The key of `keys` for an image id: the id itself, else the id without its suffix, else None."""
    for key in (image_id, without_suffix(image_id)):
        if key in keys:
            return key
    return None


def lines_by_id(path: str, kind: str) -> dict[str, tuple[int, dict]]:
    """Each line of a JSONL file by its id, with its line number; a repeated id raises ValueError."""
    out: dict[str, tuple[int, dict]] = {}
    for number, record in id_lines(path):
        key = str(record["id"])
        if key in out:
            raise ValueError(f"{path}:{number}: {kind} id {key!r} repeated (first on line {out[key][0]})")
        out[key] = (number, record)
    return out


def load_pairs(predictions: str, references: str, n: int = DEFAULT_N) -> tuple[list[str], list[str], list[Reference]]:
    """(ids, judge texts, references) matched by id, in reference order; mismatches raise ValueError."""
    preds, refs = lines_by_id(predictions, "prediction"), lines_by_id(references, "reference")
    by_ref = {}  # a prediction's id, or (ids of earlier releases) its id without the image suffix
    for key in preds:
        ref = match_id(key, refs)
        if ref is not None:
            by_ref.setdefault(ref, key)
    missing = [k for k in refs if k not in by_ref]
    extra = [k for k in preds if k not in set(by_ref.values())]
    if missing or extra:
        raise ValueError(f"ids differ: {len(missing)} references without a prediction {missing[:5]}, "
                         f"{len(extra)} predictions without a reference {extra[:5]}")
    texts = []
    for key in refs:
        number, record = preds[by_ref[key]]
        if not isinstance(record.get("text"), str):
            raise ValueError(f"{predictions}:{number}: 'text' must be a string")
        texts.append(record["text"])
    parsed_refs = []
    for key, (number, record) in refs.items():
        try:
            parsed_refs.append(Reference.from_record(record, n=n))
        except ValueError as err:
            raise ValueError(f"{references}:{number}: {err}") from None
    return list(refs), texts, parsed_refs


def load_prompts(path: str, ids: list[str]) -> tuple[list[str], list[list[Path]]]:
    """Prompts (and conditioning image paths) for the image ids, from a text or JSONL file."""
    text = Path(path).read_text(encoding="utf-8")
    if not path.endswith(".jsonl"):
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) != len(ids):
            raise ValueError(f"{path}: {len(lines)} prompts for {len(ids)} images (one prompt per line, in order)")
        return lines, [[] for _ in ids]
    records = lines_by_id(path, "prompt")
    keys = [match_id(i, records) for i in ids]  # an id, or (earlier releases' ids) the id without suffix
    missing = [i for i, key in zip(ids, keys) if key is None]
    if missing:
        raise ValueError(f"{path}: no prompt for images {missing[:5]}")
    prompts, conditioning = [], []
    for key in keys:
        number, record = records[key]
        if not isinstance(record.get("prompt"), str):
            raise ValueError(f"{path}:{number}: 'prompt' must be a string")
        cond = record.get("conditioning") or []
        cond = [cond] if isinstance(cond, str) else cond
        paths = [Path(path).parent / c for c in cond]
        absent = [str(p) for p in paths if not p.is_file()]
        if absent:
            raise ValueError(f"{path}:{number}: conditioning images not found: {absent}")
        prompts.append(record["prompt"])
        conditioning.append(paths)
    return prompts, conditioning
