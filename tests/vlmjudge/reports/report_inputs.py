"""Tiny inputs for the four methods' reports, written the way each method's score or compare
command writes them: a run with results (one low-resolution image among them) and an empty one
(nothing scored)."""
from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

#: The smallest score of the results runs: it must show as 0.00012, not as 0.000.
TINY_SCORE = 1.2e-4


def terravis_run(folder: Path, scored: bool = True) -> Path:
    """A `terravis score` JSONL of records with its manifest beside it (two T2I models by folder)."""
    from terravis import save_records, score_annotation

    images = folder / "imgs"
    def image(rel):
        path = images / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (48, 40), (30, 120, 200)).save(path)
        return str(path)

    violations = [{"type": "biological_anatomy", "severity": "major", "aspect": "a hand", "evidence": "Six fingers."},
                  {"type": "optical_effect", "severity": "minor", "aspect": "the cup", "evidence": "No shadow."}]
    rows = [("m1/a.png", True, [], None), ("m1/b.png", True, violations[:1], "image is 48x40 px, under 64 px"),
            ("m2/a.png", True, violations, None), ("m2/b.png", False, [], None)]
    records = [score_annotation({"image_id": rel, "eligible": eligible and scored, "violations": v if scored else [],
                                 "meta": {"path": image(rel), **({"resolution_note": note} if note else {})}})
               for rel, eligible, v, note in rows]
    path = folder / "terravis.jsonl"
    save_records(path, records, {"method": "terravis", "variant": "workflow", "model": "judge-A", "backend": "replay",
                                 "lam": 1.0, "alpha": 0.5, "pack_version": "default-v1"})
    return path


def _vs2_record(image_id: str, score: float | None, grid: str | None, note: str | None = None) -> dict:
    record = {"id": image_id, "status": "scored" if score is not None else "failed", "score": score,
              "error": None if score is not None else "not read from the answer: overall, grid",
              "prompt": f"a photo of {image_id}", "fields": "overall+grid", "grid_size": 4,
              "read_status": "ok" if score is not None else "failed",
              "scores": {"overall": score} if score is not None else {}, "grid": grid, "artifact": None,
              "misalign": None, "grid_status": ("ok" if grid and grid != "none" else "none") if grid else "failed",
              "category_status": {}, "missing": [] if score is not None else ["overall", "grid"],
              "explanation": "The left hand has six fingers." if score is not None else "", "text": "",
              "finish_reason": "stop", "num_tokens": 12, "num_conditioning": 0}
    if note:
        record["resolution_note"] = note
    return record


def viescore2_run(folder: Path, scored: bool = True) -> Path:
    """A `viescore2 score` results JSONL and its manifest beside it."""
    if scored:
        records = [_vs2_record("cat", 8.5, "none"), _vs2_record("dog", TINY_SCORE, "r1: 1,2\nr2: 2"),
                   _vs2_record("fox", 6.25, "r2: 2,3", note="image is 40x40 px, under 64 px")]
    else:
        records = [_vs2_record("cat", None, None), _vs2_record("dog", None, None)]
    path = folder / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    path.with_name("results.manifest.json").write_text(json.dumps({"model": "tiny-vs2", "fields": "overall+grid"}))
    return path


def _verdict(index: str, overall: float | None, decision: str | None, note: str | None = None) -> dict:
    answered = overall is not None
    return {"id": index, "status": "scored" if answered else "failed", "score": overall,
            "prompt": f"prompt {index}", "image": f"{index}.png",
            "level_scores": {"level_1": overall, "level_2": overall, "level_3": None},
            "decision": decision,
            "counts": {"yes": 2 if answered else 0, "no": 1 if answered else 0, "unknown": 0,
                       "total": 3 if answered else 0},
            "gating": {"evaluated_levels": ["level_1", "level_2"] if answered else [],
                       "skipped_levels": ["level_3"], "level_1_score": overall,
                       "regenerate_threshold": 50.0, "keep_threshold": 80.0},
            "provenance": {"resolution_note": note} if note else {}}


def fager_run(folder: Path, scored: bool = True) -> Path:
    """A `fager score` --out folder with its details.jsonl (the project's Verdict lines)."""
    from fager.records import Verdict
    from fager.saved_runs import write_verdicts

    rows = [_verdict("1", 90.0, "keep"), _verdict("2", 62.5, "edit", "image is 32x32 px, under 64 px"),
            _verdict("3", 20.0, "regenerate")] if scored else [_verdict("1", None, None)]
    run = folder / "fager_run"
    run.mkdir(parents=True, exist_ok=True)
    write_verdicts([Verdict.model_validate(r) for r in rows], run / "details.jsonl")
    return run


def regeneration_result(folder: Path, scored: bool = True) -> Path:
    """An older `regeneration compare --out FILE.json` result: summary, pairs, unpaired files."""
    pairs = [{"id": "a", "score": 71.5, "clip": 80.0, "dino": 63.0, "mllm_content_rating": 4,
              "mllm_perceptual_rating": 3, "mllm_content": 0.75, "mllm_perceptual": 0.5},
             {"id": "b", "score": 40.25, "clip": 50.5, "dino": 30.0, "mllm_content_rating": 2,
              "mllm_perceptual_rating": 4, "mllm_content": 0.25, "mllm_perceptual": 0.75,
              "resolution_note": "image is 50x50 px, under 64 px"}] if scored else []
    path = folder / "compare.json"
    path.write_text(json.dumps({"summary": {"pairs": len(pairs)}, "pairs": pairs,
                                "unpaired_files": {"references_only": ["c.png"], "generated_only": []}}))
    return path


#: method -> (its input builder, its report page's title)
METHODS = {"terravis": (terravis_run, "TerraVis report"), "viescore2": (viescore2_run, "VIEScore2 report"),
           "fager": (fager_run, "FAGER report"), "regeneration": (regeneration_result, "Image Regeneration report")}


def make_report(method: str, folder: Path, scored: bool = True) -> Path:
    """Write a method's input and run `vlmjudge <method> report INPUT --out DIR`; returns DIR."""
    from vlmjudge.cli import main

    build, _ = METHODS[method]
    source = build(folder, scored)
    out = folder / "report"
    assert main([method, "report", str(source), "--out", str(out)]) == 0
    return out
