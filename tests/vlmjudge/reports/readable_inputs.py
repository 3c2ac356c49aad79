"""Runs that make a report hard to read: real image files with long names, a judge that writes a
2,000-character explanation without a space and words longer than a table column, a long model
name in the manifest, and (Regeneration) a DINO % far below 0. Each builder returns the input of
`vlmjudge <method> report` and the file names its lowest-scored list must show."""
from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

#: The judge model every manifest names; the page must show it (and no input folder in its place).
MODEL = "acme-research/Judge-VL-72B-Instruct-long-model-name-preview"
#: An explanation no browser can break at a space.
UNBROKEN = "x" * 2000
#: A prompt with one word longer than any table column.
PROMPT = "a cat on " + "supercalifragilistic" * 12 + " at dawn"
#: The DINO % of a pair whose regeneration looks nothing like its reference.
NEGATIVE_DINO = -81.6


def picture(path: Path, shade: int) -> Path:
    """A real 64x48 PNG with a gradient (a thumbnail that is not one flat colour)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", (64, 48))
    image.putdata([((x * 4 + shade) % 256, (y * 5) % 256, shade) for y in range(48) for x in range(64)])
    image.save(path)
    return path


def long_names(n: int) -> list[str]:
    """File names with a long unbroken stem, as generators write them."""
    return [f"sample_{k}_" + "seed-0123456789-" * 6 + f"end{k}.png" for k in range(n)]


def terravis_input(folder: Path) -> tuple[Path, list[str]]:
    """A run over images straight in one `imgs` folder (ids without a folder: one T2I group)."""
    from terravis import save_records, score_annotation

    names = long_names(3)
    hand = {"type": "biological_anatomy", "severity": "major", "aspect": "a hand", "evidence": UNBROKEN}
    shadow = {"type": "optical_effect", "severity": "minor", "aspect": "the cup", "evidence": PROMPT}
    found = [[hand], [shadow], [hand, shadow]]
    records = [score_annotation({"image_id": name, "eligible": True, "violations": found[k],
                                 "meta": {"path": str(picture(folder / "imgs" / name, 40 * k))}})
               for k, name in enumerate(names)]
    path = folder / "out" / "terravis.jsonl"
    path.parent.mkdir(parents=True)
    save_records(path, records, {"method": "terravis", "variant": "workflow", "model": MODEL, "backend": "replay",
                                 "lam": 1.0, "alpha": 0.5, "pack_version": "default-v1",
                                 "inputs": [str(folder / "imgs")]})
    return path, names


def viescore2_input(folder: Path) -> tuple[Path, list[str]]:
    """A results JSONL whose ids are paths under the input folder its manifest names."""
    names = [f"photos/{name}" for name in long_names(3)]
    rows = []
    for k, name in enumerate(names):
        picture(folder / "images" / name, 60 * k)
        rows.append({"id": name, "status": "scored", "score": 2.0 + k, "prompt": PROMPT, "read_status": "ok", "scores": {"overall": 2.0 + k},
                     "grid_size": 4, "grid": "none", "grid_status": "none", "explanation": UNBROKEN})
    path = folder / "out" / "results.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    path.with_name("results.manifest.json").write_text(json.dumps(
        {"method": "viescore2", "model": MODEL, "backend": "replay", "inputs": [str(folder / "images")]}))
    return path, names


def fager_input(folder: Path) -> tuple[Path, list[str]]:
    """A `fager score` folder of eight Verdicts (indexes 0-7) over the images an items CSV lists."""
    from fager.records import Verdict
    from fager.saved_runs import write_verdicts

    names = [f"images/{name}" for name in long_names(8)]
    for k, name in enumerate(names):
        picture(folder / name, 30 * k)
    (folder / "items.csv").write_text("index,prompt,image\n" + "".join(f"{k},{PROMPT},{name}\n"
                                                                      for k, name in enumerate(names)))
    verdicts = [Verdict.model_validate(
        {"id": str(k), "status": "scored", "score": 10.0 * k, "prompt": PROMPT, "image": name, "decision": "edit",
         "level_scores": {"level_1": 10.0 * k}, "feedback": UNBROKEN,
         "counts": {"yes": 1, "no": 1, "unknown": 0, "total": 2},
         "gating": {"evaluated_levels": ["level_1"], "skipped_levels": [], "level_1_score": 10.0 * k,
                    "regenerate_threshold": 50.0, "keep_threshold": 80.0}}) for k, name in enumerate(names)]
    run = folder / "run"
    run.mkdir()
    write_verdicts(verdicts, run / "details.jsonl")
    (run / "details.manifest.json").write_text(json.dumps({"method": "fager", "model": MODEL, "backend": "replay",
                                                           "items": str(folder / "items.csv")}))
    return run, names


def regeneration_input(folder: Path) -> tuple[Path, list[str]]:
    """A compare --out JSONL (pairs by stem) with its manifest naming the two folders."""
    from vlmjudge.outputs import write_jsonl, write_manifest

    stems = [name[:-4] for name in long_names(3)]
    rows = []
    for k, stem in enumerate(stems):
        picture(folder / "refs" / f"{stem}.png", 50 * k)
        picture(folder / "gens" / f"{stem}.png", 50 * k + 25)
        dino = NEGATIVE_DINO if k == 0 else 40.0 + k
        rows.append({"id": stem, "clip": 70.0 + k, "dino": dino, "score": (70.0 + k + dino) / 2,
                     "mllm_content_rating": 3, "mllm_perceptual_rating": 4, "mllm_content": 0.5,
                     "mllm_perceptual": 0.75})
    path = folder / "out" / "compare.jsonl"
    path.parent.mkdir(parents=True)
    write_jsonl(path, rows)
    write_manifest(path, {"method": "regeneration", "model": MODEL, "refs": str(folder / "refs"),
                          "gens": str(folder / "gens"), "unpaired_files": {}})
    return path, stems


#: method -> (its input builder, the selector of one listed item on its page)
READABLE = {"terravis": (terravis_input, ".card"), "viescore2": (viescore2_input, "#lowest tbody tr"),
            "fager": (fager_input, "#lowest tbody tr"), "regeneration": (regeneration_input, "#lowest tbody tr")}
