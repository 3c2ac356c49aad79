"""Reading a suite's files as their authors wrote them, with one clear error for each way a file
can be unusable: missing, a folder, empty, not UTF-8, not the JSON or table it claims to be.

JSON is read strictly: Python's reader accepts ``NaN`` and ``Infinity``, which no JSON writer of a
prompt set produces, so they are refused here rather than passed on as a float prompt.
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .suite import SuiteFormatError


def read_text(path: Path) -> str:
    """The text of a file that must exist, be a file, hold something, and be UTF-8 (a BOM is dropped).

    Examples:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> read_text(folder)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        vlmjudge.benchmark.suites.suite.SuiteFormatError: ... is a folder, not a file
    """
    path = Path(path)
    if path.is_dir():
        raise SuiteFormatError(f"{path} is a folder, not a file")
    if not path.is_file():
        raise SuiteFormatError(f"{path} does not exist")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SuiteFormatError(f"{path} is not UTF-8 text (byte {error.start}); is it the right file?") from error
    except OSError as error:
        raise SuiteFormatError(f"{path} cannot be read ({error.strerror or type(error).__name__})") from error
    if not text.strip():
        raise SuiteFormatError(f"{path} is empty")
    return text


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key written twice (Python's reader would keep the last in silence)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} appears twice in one object")
        found[key] = value
    return found


def loads_strict(text: str, where: str) -> Any:
    """JSON text parsed without Python's NaN/Infinity extension, and with no key repeated in an object.

    Examples:
        >>> loads_strict('{"id": "a", "prompt": "a cat"}', "line 1")
        {'id': 'a', 'prompt': 'a cat'}
        >>> loads_strict('{"id": "a", "prompt": NaN}', "line 2")
        Traceback (most recent call last):
        ...
        vlmjudge.benchmark.suites.suite.SuiteFormatError: line 2: not JSON (NaN is not valid JSON)
    """
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_object_without_repeats)
    except ValueError as error:  # json.JSONDecodeError is a ValueError, as is the refusal above
        reason = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
        raise SuiteFormatError(f"{where}: not JSON ({reason})") from error


def read_json(path: Path) -> Any:
    """A whole JSON file, strictly."""
    return loads_strict(read_text(path), str(path))


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON Lines file; each must be an object."""
    rows = []
    for number, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        row = loads_strict(line, f"{path} line {number}")
        if not isinstance(row, dict):
            raise SuiteFormatError(f"{path} line {number}: expected a JSON object, got {type(row).__name__}")
        rows.append((number, row))
    return rows


def read_table(path: Path, required: Sequence[str], *, delimiter: str = ",", quoting: bool = True,
               allowed: Sequence[str] | None = None) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) for each data row of a CSV/TSV file with a header naming `required` columns.

    `quoting=False` reads every cell literally (PartiPrompts' TSV holds prompts that start with a
    quote). `allowed`, when given, lists every column the file may have: another is refused, since
    a misspelt optional column would otherwise be dropped without a word.

    Examples:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
        >>> _ = path.write_text('id,prompt\\n1,"a cat, sitting"\\n')
        >>> read_table(path, ["id", "prompt"])
        [(2, {'id': '1', 'prompt': 'a cat, sitting'})]
        >>> read_table(path, ["id", "text"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        vlmjudge.benchmark.suites.suite.SuiteFormatError: ...p.csv: no 'text' column (its columns: 'id', 'prompt')
    """
    text = read_text(path)
    options = {"delimiter": delimiter} if quoting else {"delimiter": delimiter, "quoting": csv.QUOTE_NONE}
    try:
        lines = list(csv.reader(io.StringIO(text, newline=""), **options))
    except csv.Error as error:
        raise SuiteFormatError(f"{path}: not a readable table ({error})") from error
    header = [cell.strip() for cell in lines[0]]
    missing = [name for name in required if name not in header]
    if missing:
        raise SuiteFormatError(f"{path}: no {', '.join(repr(m) for m in missing)} column "
                               f"(its columns: {', '.join(repr(h) for h in header if h) or 'none'})")
    named = [h for h in header if h]
    if len(set(named)) != len(named):
        raise SuiteFormatError(f"{path}: a column name appears twice in its header")
    if allowed is not None:
        extra = [h for h in named if h not in allowed]
        if extra:
            raise SuiteFormatError(f"{path}: unknown column(s) {', '.join(repr(e) for e in extra)}; "
                                   f"the columns are {', '.join(allowed)}")
    rows = []
    line_number = 1
    for cells in lines[1:]:
        line_number += 1
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) > len(header) and any(c.strip() for c in cells[len(header):]):
            raise SuiteFormatError(f"{path} row {line_number}: {len(cells)} cells under {len(header)} columns")
        padded = cells + [""] * (len(header) - len(cells))
        rows.append((line_number, {h: cell for h, cell in zip(header, padded) if h}))
    return rows
