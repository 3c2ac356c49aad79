"""The benchmark runner: several text-to-image models regenerate one reference folder, giving a
Table-1-like CSV (CLIP %, DINO %, MLLM content, MLLM perceptual), image grids and per-round
progress plots.

The understanding of each reference (IUT and initial prompt) is built once and shared by all
models. Baseline (c) of the paper, direct text-image judging without regeneration, runs when
the references come with their original prompts (`direct_judging=True`).
"""
from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlmjudge.generators import load_generator
from vlmjudge.images import IMAGE_SUFFIXES, is_image_file, to_pil
from vlmjudge.outputs import iter_jsonl

from ..config import LoopConfig
from ..core import RegenerationLoop, candidate_count
from ..figures import image_grid, progress_figure, save_figure
from ..asking.judging import judge_text_image
from ..records import ItemResult
from ..saved_runs import RunFolder, check_item_id
from ..scoring import normalize_rating
from ..similarity import SimilarityScorer

TABLE_COLUMNS = ("model", "items", "scored", "clip", "dino", "mllm_content", "mllm_perceptual",
                 "direct_text_image", "parse_failures")


def _item_id(stem: str) -> str:
    return check_item_id(re.sub(r"[^A-Za-z0-9._-]", "_", stem).lstrip("._-") or "item")


def load_references(folder: str | os.PathLike) -> dict[str, Any]:
    """Images of a folder (sorted by name) as {item id: RGB PIL}; ids are file stems made folder-safe."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"no reference folder {root}")
    files = sorted(p for p in root.iterdir() if is_image_file(p))
    if not files:
        raise ValueError(f"{root} holds no images ({', '.join(IMAGE_SUFFIXES)})")
    refs: dict[str, Any] = {}
    for n, path in enumerate(files):
        item = _item_id(path.stem)
        if item in refs:
            raise ValueError(f"two reference files map to the item id {item!r}")
        refs[item] = to_pil(path, index=n)
    return refs


def load_prompts(path: str | os.PathLike) -> dict[str, str]:
    """Original prompts per item from a CSV (columns id, prompt) or JSONL ({"id", "prompt"})."""
    path = Path(path)
    rows: list[tuple[str, dict[str, Any]]]  # (where, row)
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as fh:
            rows = [(f"row {n}", row) for n, row in enumerate(csv.DictReader(fh), 1)]
    else:  # JSON lines: a broken line is a JsonlError (a ValueError) naming file and line
        rows = [(f"line {n}", row) for n, row in iter_jsonl(path)]
    out = {}
    for where, row in rows:
        if not row.get("id") or not row.get("prompt"):
            raise ValueError(f"{path}: {where} needs 'id' and 'prompt'")
        out[_item_id(str(row["id"]))] = str(row["prompt"])
    return out


@dataclass
class BenchmarkResult:
    """Per-model item results, the summary table, and where the files went."""

    results: dict[str, list[ItemResult]]
    table: list[dict[str, Any]]
    files: dict[str, str] = field(default_factory=dict)


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def summarize(name: str, results: list[ItemResult], direct: list[float | None] | None = None) -> dict[str, Any]:
    """One table row: means over scored items (failed items are counted, not averaged in)."""
    ok = [r for r in results if r.status == "scored"]
    return {"model": name, "items": len(results), "scored": len(ok),
            "clip": _mean([r.clip for r in ok]), "dino": _mean([r.dino for r in ok]),
            "mllm_content": _mean([(r.mllm or {}).get("content_norm") for r in ok]),
            "mllm_perceptual": _mean([(r.mllm or {}).get("perceptual_norm") for r in ok]),
            "direct_text_image": _mean(direct) if direct is not None else None,
            "parse_failures": sum(r.parse_failures for r in results)}


def release_summary(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The public release's benchmark summary of per-image records in its own format (`clip_score`,
    `dinov2_score` cosines and `gpt4v_scores` {aesthetic, semantic, average}), so that a run of the
    release can be tabulated beside this project's.

    `average_scores` holds means over images: clip, dinov2, the aesthetic and semantic ratings as
    the release reads them (`int()`, so 4.5 counts 4 and "5" counts 5) and their average (`float()`).
    No records, or a record missing a value or holding one these conversions refuse, is a
    ValueError (the release fails on both too).
    """
    if not results:
        raise ValueError("no results to summarize")
    columns: dict[str, list[float]] = {"clip": [], "dinov2": [], "gpt4v_aesthetic": [], "gpt4v_semantic": [],
                                       "gpt4v_avg": []}
    for n, record in enumerate(results):
        try:
            ratings = record["gpt4v_scores"]
            row = {"clip": float(record["clip_score"]), "dinov2": float(record["dinov2_score"]),
                   "gpt4v_aesthetic": int(ratings["aesthetic"]), "gpt4v_semantic": int(ratings["semantic"]),
                   "gpt4v_avg": float(ratings["average"])}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"result {n} cannot be summarized as the release does: {exc!r}") from None
        for name, value in row.items():
            columns[name].append(value)
    return {"total_images": len(results),
            "average_scores": {name: sum(values) / len(values) for name, values in columns.items()}}


def round_means(results: list[ItemResult]) -> list[dict[str, Any]]:
    """Mean of the selected candidate's scores per round over items (the rounds ablation)."""
    by_round: dict[int, list[dict[str, Any]]] = {}
    for r in results:
        for row in r.rounds:
            by_round.setdefault(row["round"], []).append(row)
    return [{"round": t, "aspect": rows[0]["aspect"], "clip": _mean([x["clip"] for x in rows]),
             "dino": _mean([x["dino"] for x in rows]), "combined": _mean([x["combined"] for x in rows])}
            for t, rows in sorted(by_round.items())]


def benchmark_images(references: Mapping[str, Any], models: int, config: LoopConfig,
                     original_prompts: Mapping[str, str] | None = None, direct_judging: bool = False) -> int:
    """Images a benchmark makes in all, the unit of its progress callback: every model's loop
    candidates and, with direct judging, one image per reference that has its original prompt."""
    direct = sum(item in (original_prompts or {}) for item in references) if direct_judging else 0
    return models * (candidate_count(config, len(references)) + direct)


def _direct_judging(generator: Any, judge: Any, refs: dict[str, Any], prompts: Mapping[str, str],
                    folder: RunFolder, seed: int, pack: Any, tick: Callable[[], None]) -> list[float | None]:
    """Baseline (c): generate from the original prompt, then rate text-image consistency (1-5 -> [0, 1]);
    `tick` once per image, made or found saved."""
    items = [i for i in refs if i in prompts]
    paths = {i: folder.root / "direct" / f"{i}.png" for i in items}
    todo = [i for i in items if not paths[i].is_file()]
    for _ in range(len(items) - len(todo)):
        tick()
    if todo:
        for i, image in zip(todo, generator([prompts[i] for i in todo], [seed] * len(todo))):
            RunFolder.save_image(paths[i], image)
            tick()
    scores_path = folder.root / "direct" / "scores.json"
    saved = RunFolder.read_json(scores_path)
    if saved is None:
        rated = judge_text_image(judge, [RunFolder.load_image(paths[i]) for i in items], [prompts[i] for i in items],
                                 items=items, pack=pack)
        saved = {i: {"rating": s, "failure": f.to_json() if f else None} for i, (s, f) in zip(items, rated)}
        RunFolder.write_json(scores_path, saved)
    return [normalize_rating(saved[i]["rating"]) for i in items]


def write_table(rows: list[dict[str, Any]], path: str | os.PathLike, columns: tuple[str, ...] = TABLE_COLUMNS) -> None:
    """CSV with 2-decimal percentages and 4-decimal normalised ratings (the paper's precision)."""
    digits = {"clip": 2, "dino": 2, "combined": 2}
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else round(v, digits.get(k, 4)) if isinstance(v, float) else v)
                             for k, v in row.items()})


def run_benchmark(references: Mapping[str, Any], generators: Mapping[str, Any], judge: Any,
                  out_dir: str | os.PathLike, *, similarity: SimilarityScorer, text_judge: Any = None,
                  config: LoopConfig | None = None, pack: Any = None, original_prompts: Mapping[str, str] | None = None,
                  direct_judging: bool = False, grid_cell: int = 128,
                  on_image: Callable[[], None] | None = None) -> BenchmarkResult:
    """Regenerate every reference with every model, then write table.csv, rounds.csv, grid.png, progress.png.

    `on_image` is called once per image, made or found saved: `benchmark_images` calls in all.
    """
    if not generators:
        raise ValueError("no generators to benchmark")
    if direct_judging and not original_prompts:
        raise ValueError("direct text-image judging needs the references' original prompts")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = config or LoopConfig()
    refs = dict(references)
    results: dict[str, list[ItemResult]] = {}
    table, rounds_rows = [], []
    for name, spec in generators.items():
        check_item_id(name)
        generator = load_generator(spec)
        loop = RegenerationLoop(judge, generator, similarity, str(out / "models" / name), text_judge=text_judge,
                                config=config, pack=pack)
        results[name] = loop.run(refs, shared_dir=str(out / "understanding"), on_image=on_image)
        direct = (_direct_judging(generator, judge, refs, original_prompts or {}, loop.folder, config.seed, pack,
                                  on_image or (lambda: None)) if direct_judging else None)
        table.append(summarize(name, results[name], direct))
        rounds_rows += [{"model": name, **row} for row in round_means(results[name])]
    files = {"table": str(out / "table.csv"), "rounds": str(out / "rounds.csv"), "grid": str(out / "grid.png"),
             "progress": str(out / "progress.png")}
    write_table(table, files["table"])
    write_table(rounds_rows, files["rounds"], ("model", "round", "aspect", "clip", "dino", "combined"))
    names = list(generators)
    rows = []
    for item, ref in refs.items():
        row = [ref]
        for name in names:
            r = next(x for x in results[name] if x.id == item)
            row.append(RunFolder.load_image(out / "models" / name / r.image) if r.status == "scored" else None)
        rows.append(row)
    image_grid(rows, ["reference", *names], list(refs), cell=grid_cell).save(files["grid"])
    progress = {name: [row for row in rounds_rows if row["model"] == name] for name in names}
    save_figure(progress_figure(progress), files["progress"])
    return BenchmarkResult(results, table, files)
