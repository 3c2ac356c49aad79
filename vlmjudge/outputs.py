"""The output layout every scoring command and the distributed runner write, and the one JSONL reader.

A run's records go to one JSON-lines file; its manifest, answer cache and failures list sit
beside it, named from its stem. Keeping those names and the read/write rules here means every
command writes files any other can resume from or report on. Every JSONL read goes through
`iter_jsonl` and every record or manifest written through `json_text`.

docs/outputs.md lists the files, the rules, and what each command writes.
"""
from __future__ import annotations

import functools
import json
import math
import os
import re
import secrets
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .record_schema import check_record

#: The key of the line-1 manifest older TerraVis files carry.
MANIFEST_KEY = "manifest"


class JsonlError(ValueError):
    """A JSON-lines file that cannot be read: the message names the file and the line."""

    def __init__(self, path: str | os.PathLike, line: int | None, problem: str) -> None:
        self.path, self.line, self.problem = os.fspath(path), line, problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


def iter_jsonl(path: str | os.PathLike, *, skip_broken: bool = False,
               decoder: json.JSONDecoder | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; a line that is not a JSON object (or not UTF-8
    text) is a `JsonlError`, or with `skip_broken` left out (an interrupted earlier run's output, read
    only to count what it holds). `decoder` reads each line (a ValueError it raises names the line):
    `vlmjudge.run_records` refuses NaN and Infinity with one.

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
    if file.is_dir():
        raise JsonlError(file, None, "is a folder, not a JSON-lines file")
    if not file.is_file():
        raise JsonlError(file, None, "no such file")
    with open(file, "rb") as handle:
        yield from parse_jsonl_lines(_text_lines(handle, file, skip_broken), file, skip_broken=skip_broken,
                                     decoder=decoder or _JSON)


def _text_lines(handle: Iterable[bytes], source: Path, skip_broken: bool) -> Iterator[str]:
    """Each line decoded as UTF-8; an undecodable one is a `JsonlError` naming it (a blank line, so
    still counted, with `skip_broken`)."""
    for number, raw in enumerate(handle, 1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            if not skip_broken:
                raise JsonlError(source, number, f"the line is not UTF-8 text ({error.reason} at byte "
                                                 f"{error.start}): a binary file?") from None
            yield ""


_JSON = json.JSONDecoder()


def parse_jsonl_lines(lines: Iterable[str], source: str | os.PathLike, *, skip_broken: bool = False,
                      decoder: json.JSONDecoder = _JSON) -> Iterator[tuple[int, dict[str, Any]]]:
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
            value = decoder.decode(line)
        except json.JSONDecodeError as error:
            if skip_broken:
                continue
            raise JsonlError(source, number, f"not valid JSON ({error.msg}, column {error.colno})") from None
        except RecursionError:  # json gives up on very deep nesting
            if skip_broken:
                continue
            raise JsonlError(source, number, "not readable JSON (nested too deeply)") from None
        except ValueError as error:  # an integer of over 4300 digits, or what `decoder` refuses
            if skip_broken:
                continue
            raise JsonlError(source, number, str(error).split("; use ")[0]) from None
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
        field, bad = non_finite_field(value, "") or ("(a value)", "not finite")
        raise ValueError(f"{where}: field {field.lstrip('.')} is {bad}; records hold no NaN or Infinity") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a judge's `\ud800` escape): escaped, so it stays as written
        return json.dumps(value, ensure_ascii=True, allow_nan=False, **dump_options)
    return text


def non_finite_field(value: Any, path: str) -> tuple[str, float] | None:
    """(path as `a.b[2].c`, value) of the first NaN or infinite float in a JSON-like value, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = non_finite_field(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}")
        if found is not None:
            return found
    return None


def without_negative_zero(value: Any) -> Any:
    """A JSON-like value with every -0.0 written 0.0 (containers copied, a tuple as a list): a report
    that prints "-0" for a zero (minus an error count of 0, a rounded tiny difference) looks like a
    sign it does not have.

    Examples:
        >>> without_negative_zero({"human": -0.0, "items": [-0.0, -1.5, 0]})
        {'human': 0.0, 'items': [0.0, -1.5, 0]}
    """
    if isinstance(value, float):
        return 0.0 if value == 0 else value
    if isinstance(value, dict):
        return {key: without_negative_zero(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_negative_zero(item) for item in value]  # JSON writes a tuple as a list too
    return value


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every object of a JSON-lines file, in order (blank lines skipped)."""
    return [value for _, value in iter_jsonl(path)]


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict[str, Any]]) -> None:
    """Write `rows` as JSON lines through a temporary file (`replaced_when_done`), so a failure
    leaves no half-written file and the earlier one as it was."""
    file = Path(path)
    with replaced_when_done(file) as partial, open(partial, "w", encoding="utf-8") as handle:
        for number, row in enumerate(rows, 1):
            handle.write(json_text(row, f"{file} record {number}") + "\n")


@contextmanager
def replaced_when_done(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside `path` to write the file to; it replaces `path` (one `os.replace`: a
    reader sees the old file or the whole new one) only when the block completes, and is removed
    when it fails, leaving any earlier file as it was. Every records file, manifest, report page,
    figure and report JSON is written through here or `staged_folder`.

    Examples:
        >>> import tempfile
        >>> page = Path(tempfile.mkdtemp()) / "report.html"
        >>> _ = page.write_text("earlier")
        >>> try:
        ...     with replaced_when_done(page) as partial:
        ...         _ = partial.write_text("half")
        ...         raise RuntimeError("the writer failed midway")
        ... except RuntimeError:
        ...     pass
        >>> page.read_text(), sorted(p.name for p in page.parent.iterdir())
        ('earlier', ['report.html'])
    """
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    if file.is_dir():
        raise IsADirectoryError(f"{file} is a folder, not a file to write")
    partial = file.with_name(f".{file.name}.{secrets.token_hex(4)}.partial")  # hidden, one per writer
    try:
        yield partial
        os.replace(partial, file)
    finally:
        partial.unlink(missing_ok=True)


def write_text_whole(path: str | os.PathLike, text: str) -> Path:
    """Write `text` as UTF-8 through `replaced_when_done`; returns the path. A lone surrogate, which
    UTF-8 cannot hold (a judge's `\\ud800` escape, an older run's id of a non-UTF-8 file name), is
    written as its backslash escape rather than failing the whole file."""
    file = Path(path)
    with replaced_when_done(file) as partial:
        partial.write_bytes(text.encode("utf-8", "backslashreplace"))
    return file


@contextmanager
def staged_folder(out_dir: str | os.PathLike) -> Iterator[Path]:
    """A fresh hidden folder inside `out_dir` to write a whole report into (page, figures, JSON);
    when the block completes, each of its files replaces its namesake in `out_dir`, and when the
    block fails, nothing in `out_dir` changes: a report that fails midway leaves the earlier one.
    A namesake that is a folder is refused before anything moves.

    Examples:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp())
        >>> with staged_folder(out) as stage:
        ...     _ = (stage / "summary.json").write_text("{}")
        >>> sorted(p.name for p in out.iterdir())
        ['summary.json']
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".staged-", dir=out))
    try:
        yield stage
        files = sorted(p for p in stage.rglob("*") if not p.is_dir())
        blocked = [out / f.relative_to(stage) for f in files if (out / f.relative_to(stage)).is_dir()]
        if blocked:
            raise IsADirectoryError(f"{blocked[0]} is a folder, where the report writes a file")
        for file in files:
            target = out / file.relative_to(stage)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(file, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)  # our own scratch folder: nothing in it is kept


def staged_writer(writer: Callable[..., list[Path]]) -> Callable[..., list[Path]]:
    """A report writer `writer(source, out_dir, ...) -> written paths` made all-or-nothing: it writes
    into a `staged_folder` of `out_dir`, whose files replace their namesakes only when it returns;
    the paths returned are those in `out_dir`."""
    @functools.wraps(writer)
    def staged(source: Any, out_dir: str | os.PathLike, *args: Any, **kwargs: Any) -> list[Path]:
        out = Path(out_dir)
        with staged_folder(out) as stage:
            written = writer(source, stage, *args, **kwargs)
        return [out / Path(path).relative_to(stage) for path in written]
    return staged


#: An escape in an item id: a doubled backslash, or a byte that is not UTF-8 as `\\xNN`.
_ID_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2})")


def id_from_name(name: str | os.PathLike) -> str:
    """The item id of a file name (a path relative to the input root): text any JSON or HTML holds,
    from which `name_from_id` gets the very name back. The name's bytes (`os.fsencode`) as UTF-8,
    with each byte that is not UTF-8 written `\\xNN` and a backslash doubled; every other name is
    its own id.

    Examples:
        >>> import os
        >>> odd = os.fsdecode(b"caf\\xe9/x\\\\y.png")
        >>> print(id_from_name(odd))
        caf\\xe9/x\\\\y.png
        >>> name_from_id(id_from_name(odd)) == odd, id_from_name("café/cat.png")
        (True, 'café/cat.png')
    """
    return os.fsencode(name).replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")


def name_from_id(item_id: str) -> str:
    """The file name an id of `id_from_name` was made from (an older run's id, holding the name's
    undecodable bytes as lone surrogates, gives its name too); a ValueError for an id no file
    name can have (a surrogate that stands for no byte)."""
    raw, start = bytearray(), 0
    try:
        for match in _ID_ESCAPE.finditer(item_id):
            raw += item_id[start:match.start()].encode("utf-8", "surrogateescape")
            escape = match.group(1)
            raw += b"\\" if escape == "\\" else bytes([int(escape[1:], 16)])
            start = match.end()
        raw += item_id[start:].encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise ValueError(f"{item_id!r} holds a character no file name has") from None
    return os.fsdecode(bytes(raw))


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
    return write_text_whole(path, json_text(manifest, f"{path} (manifest)", indent=2, default=str) + "\n")


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
        except UnicodeDecodeError:
            raise JsonlError(path, None, "the manifest is not UTF-8 text") from None
        if not isinstance(manifest, dict):
            raise JsonlError(path, None, "a manifest must be a JSON object")
        return manifest
    file = Path(out)
    if not file.is_file():
        return None
    with open(file, "rb") as handle:
        first = handle.readline()
    try:
        row = json.loads(first.decode("utf-8"))
    except ValueError:  # the first line of records (not UTF-8 or not JSON): read_run reports it
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
