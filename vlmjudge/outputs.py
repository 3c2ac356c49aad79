"""The output layout every scoring command and the distributed runner write, and the one JSONL reader.

A run's records go to one JSON-lines file; its manifest, answer cache and failures list sit
beside it, named from its stem. Keeping those names and the read/write rules here means every
command writes files any other can resume from or report on. Every JSONL read goes through
`iter_jsonl` and every record or manifest written through `json_text`.

docs/outputs.md lists the files, the rules, and what each command writes.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from .record_schema import check_record

#: The key of the line-1 manifest older TerraVis files carry.
MANIFEST_KEY = "manifest"


class JsonlError(ValueError):
    """A JSON-lines file that cannot be read: the message names the file and the line."""

    def __init__(self, path: str | os.PathLike, line: int | None, problem: str) -> None:
        self.path, self.line, self.problem = os.fspath(path), line, problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


def iter_jsonl(path: str | os.PathLike, *, skip_broken: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; a line that is not a JSON object is a `JsonlError`,
    or with `skip_broken` left out (an interrupted earlier run's output, read only to count what it holds).

    Examples:
        >>> import tempfile, pathlib
        >>> bad = pathlib.Path(tempfile.mkdtemp()) / "bad.jsonl"
        >>> _ = bad.write_text('{"id": 1}\\n\\n{"id": 2\\n')
        >>> try:
        ...     list(iter_jsonl(bad))
        ... except JsonlError as error:
        ...     print(error.line, error.problem.split(" (")[0])
        3 not valid JSON
    """
    file = Path(path)
    if not file.is_file():
        raise JsonlError(file, None, "no such file")
    with open(file, encoding="utf-8") as handle:
        yield from parse_jsonl_lines(handle, file, skip_broken=skip_broken)


def parse_jsonl_lines(lines: Iterable[str], source: str | os.PathLike, *,
                      skip_broken: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """`iter_jsonl` over lines already in memory (a download, a log read whole); `source` names them
    in a `JsonlError`.

    Examples:
        >>> list(parse_jsonl_lines(['{"a": 1}', "", "[2]"], "batch-output", skip_broken=True))
        [(1, {'a': 1})]
        >>> try:
        ...     list(parse_jsonl_lines(['{"a": 1}', "[2]"], "batch-output"))
        ... except JsonlError as error:
        ...     print(error)
        batch-output:2: expected a JSON object, got list
    """
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            if skip_broken:
                continue
            raise JsonlError(source, number, f"not valid JSON ({error.msg}, column {error.colno})") from None
        except RecursionError:  # json.loads gives up on very deep nesting
            if skip_broken:
                continue
            raise JsonlError(source, number, "not readable JSON (nested too deeply)") from None
        if not isinstance(value, dict):
            if skip_broken:
                continue
            raise JsonlError(source, number, f"expected a JSON object, got {type(value).__name__}")
        yield number, value


#: Where a record keeps its annotations: a low-resolution flag goes into the first of these the record
#: has (FAGER's Verdicts: `provenance`; TerraVis's records: `meta`), else at its top level
#: (VIEScore2's and Regeneration's rows). Every writer places it with `with_resolution_note`.
NOTE_HOLDERS = ("provenance", "meta")


def with_resolution_note(record: dict[str, Any], note: str | None) -> dict[str, Any]:
    """`record` with its low-resolution flag where that method's records keep it (see `NOTE_HOLDERS`);
    the record itself is left as it was. No note, no change.

    Examples:
        >>> with_resolution_note({"score": 1.0, "meta": {"path": "a.png"}}, "low resolution: 32x32")
        {'score': 1.0, 'meta': {'path': 'a.png', 'resolution_note': 'low resolution: 32x32'}}
        >>> with_resolution_note({"score": 7.0}, "low resolution: 32x32")
        {'score': 7.0, 'resolution_note': 'low resolution: 32x32'}
        >>> resolution_note_of({"provenance": {"resolution_note": "small"}})
        'small'
    """
    if not note:
        return record
    for holder in NOTE_HOLDERS:
        if isinstance(record.get(holder), dict):
            return {**record, holder: {**record[holder], "resolution_note": note}}
    return {**record, "resolution_note": note}


def resolution_note_of(record: dict[str, Any]) -> str | None:
    """A record's low-resolution flag, wherever it sits (older runner files carry it at the top level)."""
    for holder in (record, *(record.get(name) for name in NOTE_HOLDERS)):
        if isinstance(holder, dict) and holder.get("resolution_note"):
            return str(holder["resolution_note"])
    return None


def json_text(value: Any, where: str, **dump_options: Any) -> str:
    """`value` as standard JSON; NaN or Infinity anywhere in it is a ValueError naming `where` and the
    field. Why an error and not null: a method turns an undefined number into None with its reason
    itself (a failed status, an error list), so a non-finite float reaching a writer is a bug upstream.

    Examples:
        >>> json_text({"id": "a.png", "score": 0.5}, "results.jsonl record 1")
        '{"id": "a.png", "score": 0.5}'
        >>> json_text({"id": "a.png", "checks": [{"prob": float("nan")}]}, "results.jsonl record 2")
        Traceback (most recent call last):
        ...
        ValueError: results.jsonl record 2: field checks[0].prob is nan; records hold no NaN or Infinity

        A lone surrogate, which UTF-8 cannot hold, is written as its JSON escape:

        >>> print(json_text({"reason": "odd " + chr(0xD800)}, "results.jsonl record 3"))
        {"reason": "odd \\ud800"}
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, **dump_options)
    except ValueError:
        field, bad = _non_finite_field(value, "") or ("(a value)", "not finite")
        raise ValueError(f"{where}: field {field.lstrip('.')} is {bad}; records hold no NaN or Infinity") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a judge's `\ud800` escape): escaped, so it stays as written
        return json.dumps(value, ensure_ascii=True, allow_nan=False, **dump_options)
    return text


def _non_finite_field(value: Any, path: str) -> tuple[str, float] | None:
    """(path as `a.b[2].c`, value) of the first NaN or infinite float in a JSON-like value, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = _non_finite_field(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}")
        if found is not None:
            return found
    return None


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every object of a JSON-lines file, in order (blank lines skipped)."""
    return [value for _, value in iter_jsonl(path)]


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict[str, Any]]) -> None:
    """Write `rows` as JSON lines through `<path>.partial`, so a failure leaves no half-written file."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    partial = file.with_name(file.name + ".partial")
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            for number, row in enumerate(rows, 1):
                handle.write(json_text(row, f"{file} record {number}") + "\n")
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, file)


def record_text(record: dict[str, Any], where: str) -> str:
    """One record as its JSON line's text, after `check_record`: every records file goes through
    here or `write_records`, so none can hold a record outside the shared schema."""
    return json_text(check_record(record, where), where)


def write_records(path: str | os.PathLike, records: Iterable[dict[str, Any]]) -> None:
    """`write_jsonl` for a run's records, each checked against the shared schema as it is written."""
    write_jsonl(path, (dict(check_record(record, f"{path} record {number}"))
                       for number, record in enumerate(records, 1)))


def beside(out: str | os.PathLike, suffix: str) -> Path:
    """A file next to the records, named from their stem: beside("r.jsonl", ".manifest.json") -> r.manifest.json."""
    out = Path(out)
    return out.with_name(out.stem + suffix)


def manifest_path(out: str | os.PathLike) -> Path:
    """Where a run's manifest goes: `<stem>.manifest.json` beside its records."""
    return beside(out, ".manifest.json")


def default_cache_path(out: str | os.PathLike) -> Path:
    """The default answer cache of a run: `<stem>.cache.sqlite` beside its records."""
    return beside(out, ".cache.sqlite")


def write_manifest(out: str | os.PathLike, manifest: dict[str, Any]) -> Path:
    """Write the manifest of the run whose records are `out`; returns its path."""
    path = manifest_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json_text(manifest, f"{path} (manifest)", indent=2, default=str) + "\n", encoding="utf-8")
    return path


def is_manifest_line(row: dict[str, Any]) -> bool:
    """Whether a JSONL object is the line-1 manifest of an older TerraVis file."""
    return set(row) == {MANIFEST_KEY} and isinstance(row[MANIFEST_KEY], (dict, type(None)))


def read_manifest(out: str | os.PathLike) -> dict[str, Any] | None:
    """The manifest of the run whose records are `out`: the file beside them, else an older file's
    line-1 manifest, else None. Only a broken manifest file is an error (a missing one is None)."""
    path = manifest_path(out)
    if path.is_file():
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise JsonlError(path, error.lineno, f"not valid JSON ({error.msg})") from None
        if not isinstance(manifest, dict):
            raise JsonlError(path, None, "a manifest must be a JSON object")
        return manifest
    file = Path(out)
    if not file.is_file():
        return None
    with open(file, encoding="utf-8") as handle:
        first = handle.readline()
    try:
        row = json.loads(first)
    except ValueError:  # the first line of records: any problem in it is reported by read_run
        return None
    return dict(row[MANIFEST_KEY] or {}) if isinstance(row, dict) and is_manifest_line(row) else None


def read_run(path: str | os.PathLike) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The records of a run and its manifest ({} when it has none, as the runner's older files).

    Examples:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "results.jsonl"
        >>> write_jsonl(out, [{"id": "a.png", "score": 1.0}])
        >>> _ = write_manifest(out, {"method": "toy"})
        >>> read_run(out)
        ([{'id': 'a.png', 'score': 1.0}], {'method': 'toy'})
        >>> manifest_path(out).name, default_cache_path(out).name
        ('results.manifest.json', 'results.cache.sqlite')
    """
    records = [row for row in read_jsonl(path) if not is_manifest_line(row)]
    return records, read_manifest(path) or {}
