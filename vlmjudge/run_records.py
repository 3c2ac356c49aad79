"""A saved run's records as the commands that read runs take them (`vlmjudge compare`, `vlmjudge
agreement`): one reader, so both take and refuse the same files in the same words.

A bad number reaches a statistic silently: an `Infinity` ranks its run first, `true` reads as 1.0,
an unknown status passes for scored, an id given twice counts twice. So each record is checked
where it is read, by the one record schema (`vlmjudge.record_schema`), with NaN and Infinity
refused anywhere in it, and an id given twice or a run without records refused: one line naming
the file and line (`RunFileError`). The score is checked against the method's range once the
method is known (`in_score_range`). A run file streams (`iter_run_records`): its manifest first
(`run_manifest`), then each record checked as it is read.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .outputs import JsonlError, is_manifest_line, iter_jsonl, non_finite_field, read_manifest
from .record_schema import RecordSchemaError, check_record, check_score_range


class RunFileError(ValueError):
    """A run that cannot be used as it is, in one line naming the file and line (or record)."""


def _refuse_constant(name: str) -> float:
    """What `FINITE_JSON` makes of NaN, Infinity and -Infinity: a refusal."""
    raise ValueError(f"{name} in the line: records hold no NaN or Infinity")


def _finite_float(text: str) -> float:
    """A JSON number as a float; one beyond a float's range (1e400 would read as infinity) is refused."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:24]} is beyond a float's range: records hold no NaN or Infinity")
    return value


#: Python's json reads NaN, Infinity and 1e400 as floats that no record holds; this reader refuses them.
FINITE_JSON = json.JSONDecoder(parse_float=_finite_float, parse_constant=_refuse_constant)


@dataclass
class RunRecords:
    """A run's records, where each was read (`path:line`, or `run0 record 3` for records given in
    Python), its manifest ({} without one) and its path (None for records given in Python)."""

    records: list[dict]
    where: list[str]
    manifest: dict
    path: str | None = None


def run_manifest(path: str | os.PathLike) -> dict:
    """The manifest of the run file `path` ({} without one), after checking that `path` is a file:
    read before the records, so that the method is known while they stream."""
    file = Path(path)
    if file.is_dir():
        raise RunFileError(f"{file} is a folder; give the run's records file (e.g. {file / 'records.jsonl'})")
    if not file.is_file():
        raise RunFileError(f"{file}: no such file")
    try:
        return read_manifest(file) or {}
    except JsonlError as error:
        raise RunFileError(str(error)) from None
    except OSError as error:  # a file it may not read
        raise RunFileError(f"{file}: cannot be read ({error.strerror or error})") from None


def iter_run_records(path: str | os.PathLike) -> Iterator[tuple[dict, str]]:
    """(record, `path:line`) for each record of a run file, checked as it is read (`check_record`,
    each id once), without holding the file's records: a 100k-record run streams in bounded memory
    per record. A run without records is refused when the file ends."""
    file = Path(path)
    first_at: dict[str, int] = {}
    try:
        for number, record in iter_jsonl(file, decoder=FINITE_JSON):
            if is_manifest_line(record):  # an older file's line-1 manifest
                continue
            where = f"{file}:{number}"
            _check_one(record, where)
            earlier = first_at.setdefault(record["id"], number)
            if earlier != number:
                raise RunFileError(f"{where}: id {record['id']!r} appears twice (also at {file}:{earlier}); "
                                   "a run holds one record per item")
            yield record, where
    except JsonlError as error:
        raise RunFileError(str(error)) from None
    except OSError as error:
        raise RunFileError(f"{file}: cannot be read ({error.strerror or error})") from None
    if not first_at:
        raise RunFileError(f"{file}: holds no records (an empty run)")


def read_run_records(path: str | os.PathLike) -> RunRecords:
    """A run file's records, each checked (`iter_run_records`), and its manifest.

    Examples:
        >>> import tempfile, pathlib
        >>> run = pathlib.Path(tempfile.mkdtemp()) / "records.jsonl"
        >>> _ = run.write_text('{"id": "a.png", "status": "scored", "score": Infinity}\\n')
        >>> try:
        ...     read_run_records(run)
        ... except RunFileError as error:
        ...     print(str(error).replace(str(run), "records.jsonl"))
        records.jsonl:1: Infinity in the line: records hold no NaN or Infinity
    """
    manifest = run_manifest(path)
    read = list(iter_run_records(path))
    return RunRecords([record for record, _ in read], [where for _, where in read], manifest, str(path))


def _check_one(record: Mapping, where: str) -> None:
    """One record by the one record schema, as a `RunFileError`."""
    try:
        check_record(record, where)
    except RecordSchemaError as error:
        raise RunFileError(str(error)) from None


def records_given(records: Any, name: str) -> RunRecords:
    """Records handed over in Python (a list of mappings), checked as a file's are; `name` names the
    run in a refusal (`run0 record 3: ...`)."""
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Sequence):
        raise RunFileError(f"{name}: a run is a records file or a list of records, got {type(records).__name__}")
    kept = list(records)
    if not kept:
        raise RunFileError(f"{name}: holds no records (an empty run)")
    where = [f"{name} record {number}" for number in range(1, len(kept) + 1)]
    for record, place in zip(kept, where):
        if not isinstance(record, Mapping):
            raise RunFileError(f"{place}: a record is a mapping, got {type(record).__name__}")
        bad = non_finite_field(dict(record), "")
        if bad is not None:
            raise RunFileError(f"{place}: field {bad[0].lstrip('.')} is {bad[1]}; records hold no NaN or Infinity")
    run = RunRecords(kept, where, {}, None)
    check_records(run)
    return run


def check_records(run: RunRecords) -> None:
    """Every record by the one record schema (`check_record`: id, a known status, a score that is a
    finite number exactly when scored), and each id once; a `RunFileError` names the first that is not."""
    first_at: dict[str, int] = {}
    for position, (record, where) in enumerate(zip(run.records, run.where)):
        _check_one(record, where)
        earlier = first_at.setdefault(record["id"], position)
        if earlier != position:
            raise RunFileError(f"{where}: id {record['id']!r} appears twice (also at {run.where[earlier]}); "
                               "a run holds one record per item")


def in_score_range(records: Iterable[tuple[Mapping, str]], score_range: tuple[float, float],
                   method: str) -> Iterator[tuple[Mapping, str]]:
    """The (record, where) pairs, each scored record's score checked against the method's `score_range`
    (`MethodSpec.score_range`) as it passes; a score outside it was not made by the method (1e308 is
    finite, not a TerraVis score): a `RunFileError` naming it."""
    for record, where in records:
        try:
            check_score_range(record, score_range, where, method)
        except RecordSchemaError as error:
            raise RunFileError(str(error)) from None
        yield record, where


def check_score_ranges(runs: Sequence[RunRecords], score_range: tuple[float, float], method: str) -> None:
    """`in_score_range` over whole runs read into memory."""
    for run in runs:
        for _ in in_score_range(zip(run.records, run.where), score_range, method):
            pass
