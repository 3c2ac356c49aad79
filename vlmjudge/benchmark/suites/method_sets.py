"""Readers of the methods' own sets: FAGER's released factual sets (a folder with prompts.csv, as in
its repository's data/ABO and data/culture) and Image Regeneration's reference sets (a folder of
reference images, which its paper does not publish).

FAGER's reference images are not in its repository (only their manifest): a folder holding them
under ``selected_images/`` gives each prompt its reference, and one listed but absent is an error.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from vlmjudge.images import IMAGE_SUFFIXES

from .custom import PROMPT_FORMATS, read_prompt_rows
from .published import locate
from .suite import SuiteFormatError, SuitePrompt, checked_id, checked_reference, checked_tags, checked_text
from .tables import read_table

#: Files of a released FAGER dataset folder besides prompts.csv, by the role they play here.
FAGER_FILES = {"exclude": "exclude_index.csv", "manifest": "selected_images_manifest.csv", "qa": "QA.csv"}


def fager_files(suite_file: Path) -> dict[str, Path]:
    """The files of a FAGER dataset folder (or of the folder of the prompts.csv given)."""
    prompts = locate(suite_file, ("prompts.csv",), "fager")
    folder = prompts.parent
    files = {"prompts": prompts}
    files.update({role: folder / name for role, name in FAGER_FILES.items() if (folder / name).is_file()})
    if (folder / "selected_images").is_dir():
        files["images"] = folder / "selected_images"
    return files


def _fager_references(files: Mapping[str, Path], prompt_columns: set[str]) -> tuple[str, dict[str, str]] | None:
    """(join column, {key: image file name}) from the manifest, when the folder has the images."""
    if "images" not in files:
        return None
    if "manifest" not in files:
        raise SuiteFormatError(f"{files['images']}: no selected_images_manifest.csv beside it, so which image "
                               "belongs to which prompt is unknown")
    manifest = files["manifest"]
    rows = read_table(manifest, ["filename"])
    columns = set(rows[0][1]) if rows else set()
    join = next((c for c in ("image_id", "prompt") if c in columns and c in prompt_columns), None)
    if join is None:
        raise SuiteFormatError(f"{manifest}: needs an 'image_id' or 'prompt' column that prompts.csv also has")
    names: dict[str, str] = {}
    for number, row in rows:
        key = row[join]
        if key in names:
            raise SuiteFormatError(f"{manifest} row {number}: {join} {key!r} is listed twice")
        names[key] = checked_text(row["filename"], f"{manifest} row {number}", "filename")
    return join, names


def read_fager(files: Mapping[str, Path]) -> list[SuitePrompt]:
    """FAGER's prompts.csv (``index``, ``prompt``, and for ABO ``brand``, ``image_id``): ids are the
    ``index`` values; rows listed in exclude_index.csv are left out, as FAGER's first step skips them;
    ABO's ``brand`` is the ``brand`` tag."""
    path = files["prompts"]
    rows = read_table(path, ["index", "prompt"])
    excluded = ({row["index"].strip() for _, row in read_table(files["exclude"], ["index"])}
                if "exclude" in files else set())
    references = _fager_references(files, set(rows[0][1]) if rows else set())
    prompts = []
    for number, row in rows:
        where = f"{path} row {number}"
        prompt_id = checked_id(row["index"], where)
        if prompt_id in excluded:
            continue
        brand = checked_tags(row.get("brand", ""), where, "brand")
        reference = None
        if references is not None:
            join, names = references
            if row[join] not in names:
                raise SuiteFormatError(f"{where}: selected_images_manifest.csv lists no image for {join} {row[join]!r}")
            reference = checked_reference(names[row[join]], files["images"], where)
        prompts.append(SuitePrompt(prompt_id, checked_text(row["prompt"], where), {"brand": brand} if brand else {},
                                   reference))
    return prompts


def regeneration_files(suite_file: Path) -> dict[str, Path]:
    """A prompts file with a reference per row, a folder holding one (``prompts.csv|tsv|jsonl``),
    or a folder of reference images."""
    path = Path(suite_file)
    if path.is_file():
        return {"prompts": path}
    if not path.is_dir():
        raise SuiteFormatError(f"suite 'regeneration': --suite-file {path} does not exist")
    for suffix in PROMPT_FORMATS:
        if (path / f"prompts{suffix}").is_file():
            return {"prompts": path / f"prompts{suffix}"}
    return {"images": path}


def _images_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir()
                  if p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".") and not p.is_dir())


def read_regeneration(files: Mapping[str, Path]) -> list[SuitePrompt]:
    """Reference images as prompts with no text: each image's file stem is its id, and the subfolder
    it sits in (one level down; the style or content type) is its ``category`` tag.

    A prompts file instead gives ids, original prompts (empty allowed) and a reference on every row.
    """
    if "prompts" in files:
        prompts = read_prompt_rows(files["prompts"], allow_empty_prompt=True)
        lacking = [p.id for p in prompts if p.reference is None]
        if lacking:
            raise SuiteFormatError(f"{files['prompts']}: prompt(s) {', '.join(lacking[:3])} have no reference image; "
                                   "Image Regeneration regenerates a reference")
        return prompts
    root = files["images"]
    groups = [("", root)] + [(sub.name, sub) for sub in sorted(root.iterdir())
                             if sub.is_dir() and not sub.name.startswith(".")]
    prompts = []
    for category, folder in groups:
        for image in _images_in(folder):
            where = str(image)
            tags = {"category": (category,)} if category else {}
            prompts.append(SuitePrompt(checked_id(image.stem, where), "", tags,
                                       checked_reference(image.name, folder, where)))
    if not prompts:
        raise SuiteFormatError(f"{root} holds no reference images ({', '.join(IMAGE_SUFFIXES)}), "
                               "neither directly nor one folder down")
    return prompts
