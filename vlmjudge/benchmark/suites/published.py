"""Readers of the public text-to-image prompt sets, each in the layout its authors publish:
GenAI-Bench (genai_image.json + genai_skills.json), DrawBench (the sheet's CSV), PartiPrompts (a
TSV), TIFA v1.0 (tifa_v1.0_text_inputs.json) and COCO captions (the Karpathy test split's parquet).

Each reader takes the local paths of the published files and returns the suite's prompts in the
published order; ids are the authors' own where they give ids, else the 0-based row of the file.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from .suite import SuiteFormatError, SuitePrompt, checked_id, checked_tags, checked_text
from .tables import read_json, read_table

#: GenAI-Bench's two skill groups (its paper's Table 1; its evaluation code groups tags the same way).
GENAI_BASIC = frozenset({"attribute", "scene", "spatial relation", "action relation", "part relation"})
GENAI_ADVANCED = frozenset({"counting", "comparison", "differentiation", "negation", "universal"})
#: Keys of genai_skills.json that give a prompt's level rather than one skill.
GENAI_LEVELS = ("basic", "advanced")
#: The seed of the COCO caption draw (see `draw_coco`).
COCO_SEED = 0


def read_genai_bench(image_json: Path, skills_json: Path) -> list[SuitePrompt]:
    """GenAI-Bench: ``{"00001": {"prompt": ...}, ...}`` and ``{"<skill>": [1, 17, ...], ...}``.

    A skill lists prompts by number; the authors' code looks each number up as the five-digit key
    ``f"{n:05d}"``, so that is the rule here, and a number with no such prompt is refused. The
    ``basic``/``advanced`` lists give the level; a file without them gets the paper's rule (advanced
    when a prompt needs one advanced skill).
    """
    entries = read_json(image_json)
    if not isinstance(entries, dict):
        raise SuiteFormatError(f"{image_json}: expected an object of prompt entries keyed by id, "
                               f"got {type(entries).__name__}")
    skills = read_json(skills_json)
    if not isinstance(skills, dict):
        raise SuiteFormatError(f"{skills_json}: expected an object of skill -> prompt numbers, got {type(skills).__name__}")
    tags: dict[str, dict[str, list[str]]] = {key: {"skill": [], "level": []} for key in entries}
    for skill, numbers in skills.items():
        where = f"{skills_json} skill {skill!r}"
        name = checked_text(skill, where, "skill")
        if not isinstance(numbers, list):
            raise SuiteFormatError(f"{where}: expected a list of prompt numbers, got {type(numbers).__name__}")
        kind = "level" if name.lower() in GENAI_LEVELS else "skill"
        for number in numbers:
            if isinstance(number, bool) or not isinstance(number, int):
                raise SuiteFormatError(f"{where}: {number!r} is not a prompt number")
            key = f"{number:05d}"
            if key not in tags:
                raise SuiteFormatError(f"{where}: lists prompt {number} (key {key!r}), which {image_json.name} lacks")
            if name not in tags[key][kind]:
                tags[key][kind].append(name)
    has_levels = any(name.lower() in GENAI_LEVELS for name in skills)
    prompts = []
    for key, entry in entries.items():
        where = f"{image_json} entry {key!r}"
        prompt_id = checked_id(key, where)
        if not isinstance(entry, dict) or "prompt" not in entry:
            raise SuiteFormatError(f"{where}: expected an object with a 'prompt'")
        if "id" in entry and str(entry["id"]) != key:
            raise SuiteFormatError(f"{where}: its 'id' {entry['id']!r} differs from its key")
        found = tags[key]
        if not has_levels:
            lowered = {s.lower() for s in found["skill"]}
            found["level"] = (["advanced"] if lowered & GENAI_ADVANCED else
                              ["basic"] if lowered & GENAI_BASIC else [])
        categories = {kind: tuple(values) for kind, values in found.items() if values}
        prompts.append(SuitePrompt(prompt_id, checked_text(entry["prompt"], where), categories))
    return prompts


def read_drawbench(csv_path: Path) -> list[SuitePrompt]:
    """DrawBench's sheet as CSV (columns ``Prompts``, ``Category``); ids ``drawbench_<row>``, 0-based,
    as TIFA v1.0 numbers DrawBench's prompts."""
    prompts = []
    for index, (row_number, row) in enumerate(read_table(csv_path, ["Prompts", "Category"])):
        where = f"{csv_path} row {row_number}"
        categories = {"category": tags} if (tags := checked_tags(row["Category"], where, "category")) else {}
        prompts.append(SuitePrompt(f"drawbench_{index}", checked_text(row["Prompts"], where), categories))
    return prompts


def read_partiprompts(tsv_path: Path) -> list[SuitePrompt]:
    """PartiPrompts.tsv (columns ``Prompt``, ``Category``, ``Challenge``, ``Note``), read literally:
    some prompts begin with a quotation mark that a CSV reader would strip. Ids ``parti_<row>``, 0-based."""
    prompts = []
    rows = read_table(tsv_path, ["Prompt", "Category", "Challenge"], delimiter="\t", quoting=False)
    for index, (row_number, row) in enumerate(rows):
        where = f"{tsv_path} row {row_number}"
        categories = {kind: tags for kind, column in (("category", "Category"), ("challenge", "Challenge"))
                      if (tags := checked_tags(row[column], where, kind))}
        prompts.append(SuitePrompt(f"parti_{index}", checked_text(row["Prompt"], where), categories))
    return prompts


def read_tifa(json_path: Path) -> list[SuitePrompt]:
    """tifa_v1.0_text_inputs.json: ``[{"id": "coco_301091", "caption": ..., "coco_val_id": ...}, ...]``;
    the id's prefix (coco, drawbench, partiprompt, paintskill) is the prompt's ``source`` tag."""
    entries = read_json(json_path)
    if not isinstance(entries, list):
        raise SuiteFormatError(f"{json_path}: expected a list of text inputs, got {type(entries).__name__}")
    prompts = []
    for number, entry in enumerate(entries, 1):
        where = f"{json_path} entry {number}"
        if not isinstance(entry, dict) or "id" not in entry or "caption" not in entry:
            raise SuiteFormatError(f"{where}: expected an object with 'id' and 'caption'")
        prompt_id = checked_id(entry["id"], where)
        source = prompt_id.rsplit("_", 1)[0] if "_" in prompt_id else ""
        categories = {"source": (source,)} if source else {}
        prompts.append(SuitePrompt(prompt_id, checked_text(entry["caption"], where, "caption"), categories))
    return prompts


def read_coco_rows(parquet_path: Path) -> list[tuple[int, str]]:
    """(COCO image id, first caption) per image of a Karpathy-split parquet (columns ``cocoid``,
    ``sentences``: captions as text, or as ``{"raw": ...}`` as Karpathy's JSON holds them; rows of
    another ``split`` than ``test`` are left out when the column is there)."""
    import pyarrow.parquet as pq
    from pyarrow import ArrowException

    if parquet_path.is_dir() or not parquet_path.is_file():
        raise SuiteFormatError(f"{parquet_path} is {'a folder' if parquet_path.is_dir() else 'missing'}, "
                               "not a parquet file")
    try:
        table = pq.read_table(parquet_path)
    except (ArrowException, OSError) as error:
        raise SuiteFormatError(f"{parquet_path}: not a readable parquet file ({type(error).__name__})") from error
    missing = [c for c in ("cocoid", "sentences") if c not in table.column_names]
    if missing:
        raise SuiteFormatError(f"{parquet_path}: no {', '.join(repr(m) for m in missing)} column "
                               f"(its columns: {', '.join(table.column_names)})")
    rows = []
    for number, row in enumerate(table.to_pylist(), 1):
        if "split" in row and row["split"] != "test":
            continue
        where = f"{parquet_path} row {number}"
        cocoid, sentences = row["cocoid"], row["sentences"]
        if isinstance(cocoid, bool) or not isinstance(cocoid, int):
            raise SuiteFormatError(f"{where}: cocoid {cocoid!r} is not a whole number")
        if not isinstance(sentences, list) or not sentences:
            raise SuiteFormatError(f"{where}: sentences must be a non-empty list of captions")
        first = sentences[0]
        if isinstance(first, dict) and "raw" in first:  # Karpathy's own dataset_coco.json keeps {"raw": ...}
            first = first["raw"]
        rows.append((cocoid, checked_text(first, where, "caption")))
    if not rows:
        raise SuiteFormatError(f"{parquet_path}: holds no test-split images")
    return rows


def draw_coco(rows: list[tuple[int, str]], count: int | None, seed: int = COCO_SEED) -> list[SuitePrompt]:
    """`count` images drawn from `rows` (all when None): the images whose SHA-256 of ``"<seed>:<cocoid>"``
    sorts first, listed by image id; each gives its first caption, as id ``coco_image_<cocoid>``.

    The rule needs no random generator, so any language reproduces the same draw.

    Examples:
        >>> rows = [(9, "a dog"), (4, "a cat"), (7, "a bus")]
        >>> [p.id for p in draw_coco(rows, 2)] == [p.id for p in draw_coco(list(reversed(rows)), 2)]
        True
        >>> [p.prompt for p in draw_coco(rows, None)]
        ['a cat', 'a bus', 'a dog']
    """
    ids = [cocoid for cocoid, _ in rows]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})[:3]
        raise SuiteFormatError(f"COCO rows repeat image ids {repeated}")
    if count is not None and count > len(rows):
        raise SuiteFormatError(f"cannot draw {count} COCO images from a file of {len(rows)}")
    key = {cocoid: hashlib.sha256(f"{seed}:{cocoid}".encode()).hexdigest() for cocoid in ids}
    chosen = sorted(rows, key=lambda row: key[row[0]])[:count] if count is not None else rows
    return [SuitePrompt(f"coco_image_{cocoid}", caption) for cocoid, caption in sorted(chosen)]


def locate(suite_file: Path, names: tuple[str, ...], suite: str) -> Path:
    """The file `suite_file`, or inside the folder `suite_file` the first of `names` present."""
    suite_file = Path(suite_file)
    if suite_file.is_file():
        return suite_file
    if suite_file.is_dir():
        for name in names:
            if (suite_file / name).is_file():
                return suite_file / name
        raise SuiteFormatError(f"suite {suite!r}: {suite_file} holds none of {', '.join(names)}")
    raise SuiteFormatError(f"suite {suite!r}: --suite-file {suite_file} does not exist")


def genai_files(suite_file: Path) -> Mapping[str, Path]:
    """genai_image.json and genai_skills.json: a folder holding both, or the first with the second beside it."""
    image_json = locate(suite_file, ("genai_image.json",), "genai-bench")
    skills_json = image_json.parent / "genai_skills.json"
    if not skills_json.is_file():
        raise SuiteFormatError(f"suite 'genai-bench': no genai_skills.json beside {image_json} "
                               "(the skill tags are read from it)")
    return {"prompts": image_json, "skills": skills_json}
