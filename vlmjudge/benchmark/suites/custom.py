"""Your own suite (`--prompts FILE`): a CSV, TSV or JSON Lines file with `id`, `prompt`, and
optionally `category` and `reference` (an image; a relative path is read from the file's folder).

Any other column is refused rather than ignored, so that a misspelt ``reference`` does not leave
every prompt without its image.
"""
from __future__ import annotations

import os
from pathlib import Path

from .suite import (PromptSuite, SuiteFormatError, SuitePrompt, checked_id, checked_reference, checked_tags,
                    checked_text)
from .tables import read_jsonl, read_table

#: The columns (or JSON keys) of a prompts file; the first two are required.
PROMPT_COLUMNS = ("id", "prompt", "category", "reference")
#: File suffixes read as prompts files, and the table delimiter of each (None: JSON Lines).
PROMPT_FORMATS = {".csv": ",", ".tsv": "\t", ".jsonl": None}


def read_prompt_rows(path: str | os.PathLike, *, allow_empty_prompt: bool = False) -> list[SuitePrompt]:
    """The prompts of a prompts file, checked; `allow_empty_prompt` lets a row with a reference
    image go without text (a reference set, as Image Regeneration uses)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in PROMPT_FORMATS:
        raise SuiteFormatError(f"{path}: a prompts file is {', '.join(PROMPT_FORMATS)}, not {suffix or 'no suffix'}")
    delimiter = PROMPT_FORMATS[suffix]
    if delimiter is None:
        rows = []
        for number, row in read_jsonl(path):
            extra = [key for key in row if key not in PROMPT_COLUMNS]
            if extra:
                raise SuiteFormatError(f"{path} line {number}: unknown key(s) {', '.join(repr(e) for e in extra)}; "
                                       f"the keys are {', '.join(PROMPT_COLUMNS)}")
            missing = [key for key in PROMPT_COLUMNS[:2] if key not in row]
            if missing:
                raise SuiteFormatError(f"{path} line {number}: no {', '.join(repr(m) for m in missing)}")
            rows.append((f"{path} line {number}", row))
    else:
        rows = [(f"{path} row {number}", row)
                for number, row in read_table(path, PROMPT_COLUMNS[:2], delimiter=delimiter, allowed=PROMPT_COLUMNS)]
    if not rows:
        raise SuiteFormatError(f"{path}: holds no prompts")
    prompts = []
    for where, row in rows:
        reference = row.get("reference")
        has_reference = reference is not None and not (isinstance(reference, str) and not reference.strip())
        text = checked_text(row["prompt"], where, allow_empty=allow_empty_prompt and has_reference)
        category = row.get("category")
        tags = checked_tags(() if category is None else category, where, "category")
        prompts.append(SuitePrompt(checked_id(row["id"], where), text, {"category": tags} if tags else {},
                                   checked_reference(reference, path.parent, where) if has_reference else None))
    return prompts


def read_prompts(path: str | os.PathLike) -> PromptSuite:
    """Your own suite from a prompts file (`--prompts FILE`), named after the file.

    Examples:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "mine.csv"
        >>> _ = path.write_text("id,prompt,category\\ncat,a cat on a mat,animals\\nbus,a red bus,\\n")
        >>> suite = read_prompts(path)
        >>> suite.name, [(p.id, dict(p.categories)) for p in suite.prompts]
        ('mine', [('cat', {'category': ('animals',)}), ('bus', {})])
    """
    path = Path(path)
    prompts = read_prompt_rows(path)
    return PromptSuite(path.stem, prompts, source=str(path), license="as the file's owner states",
                       size=len(prompts), origin=str(path), files={"prompts": str(path)})
