"""QA sets on disk: the released QA.csv layout, and a store keyed by prompt, agent models and prompt pack.

A QA set is expensive to build (four agent calls and a reference search) and must be reused
unchanged across every image it scores, so it is stored once per (prompt, agent models,
prompt-pack version) key, in a folder written so that a reader never sees half a record.

docs/methods/fager.md, "Storing QA sets", gives the QA.csv columns and the store layout.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from .schema import QAItem, QASet, ReferenceExtraction, Rubric, Verification

QA_COLUMNS: tuple[str, ...] = (
    "index", "prompt", "level", "category", "importance", "question", "gold_answer", "answer_space",
    "source_fact",
)
GOLD_ANSWER = "yes"  # every FAGER question is phrased so that a factual image answers yes
ANSWER_SPACE = "yes|no|unknown"


class QAFormatError(ValueError):
    """A QA file does not follow the released layout."""


# ---- the released QA.csv layout ----------------------------------------------------------

def read_qa_csv(path: str | os.PathLike) -> list[QASet]:
    """Read a QA.csv into QA sets, one per (index, prompt), in file order."""
    with open(path, newline="", encoding="utf-8") as handle:
        return parse_qa_csv(handle.read(), source=str(path))


def parse_qa_csv(text: str, source: str = "<QA.csv>") -> list[QASet]:
    """Parse QA.csv text; every row must carry gold answer `yes` and the yes|no|unknown space."""
    try:  # read whole first: csv raises its own Error (a field over its size limit, a stray quote)
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as error:
        raise QAFormatError(f"{source}: not readable as CSV ({error})") from None
    reader = iter(rows)
    header = next(reader, None)
    if header is None or tuple(header) != QA_COLUMNS:
        raise QAFormatError(f"{source}: header must be {','.join(QA_COLUMNS)}; got {header}")
    groups: dict[tuple[str, str], list[QAItem]] = {}
    order: list[tuple[str, str]] = []
    for line_no, row in enumerate(reader, start=2):
        if len(row) != len(QA_COLUMNS):
            raise QAFormatError(f"{source}:{line_no}: expected {len(QA_COLUMNS)} fields, got {len(row)}")
        record = dict(zip(QA_COLUMNS, row))
        if record["gold_answer"] != GOLD_ANSWER or record["answer_space"] != ANSWER_SPACE:
            raise QAFormatError(f"{source}:{line_no}: gold_answer must be {GOLD_ANSWER!r} and answer_space "
                                f"{ANSWER_SPACE!r}; got {record['gold_answer']!r}, {record['answer_space']!r}")
        key = (record["index"], record["prompt"])
        if key not in groups:
            if key[0] and any(k[0] == key[0] for k in order):
                raise QAFormatError(f"{source}:{line_no}: index {key[0]!r} appears with two prompts")
            groups[key] = []
            order.append(key)
        elif order[-1] != key:
            raise QAFormatError(f"{source}:{line_no}: rows of index {key[0]!r} are not contiguous")
        try:
            groups[key].append(QAItem(**{c: record[c] for c in QAItem.model_fields}))
        except ValidationError as error:
            raise QAFormatError(f"{source}:{line_no}: {error}") from None
    try:
        return [QASet(index=index or None, prompt=prompt, items=groups[(index, prompt)])
                for index, prompt in order]
    except ValidationError as error:
        raise QAFormatError(f"{source}: {error}") from None


def format_qa_csv(qa_sets: Iterable[QASet]) -> str:
    """QA sets as QA.csv text: minimal quoting, LF line ends, as released."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(QA_COLUMNS)
    for qa_set in qa_sets:
        for item in qa_set.items:
            writer.writerow([qa_set.index or "", qa_set.prompt, item.level, item.category, item.importance,
                             item.question, GOLD_ANSWER, ANSWER_SPACE, item.source_fact])
    return out.getvalue()


def write_qa_csv(qa_sets: Iterable[QASet], path: str | os.PathLike) -> None:
    """Write QA sets to a QA.csv file (atomically)."""
    _write_atomic(Path(path), format_qa_csv(qa_sets))


# ---- the keyed store ---------------------------------------------------------------------

class AgentModels(BaseModel):
    """The model behind each rubric-building agent; a different model is a different QA set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    proposal: str = Field(min_length=1)
    extraction: str = Field(min_length=1)
    verification: str = Field(min_length=1)
    qa: str = Field(min_length=1)


class QASetKey(BaseModel):
    """What a QA set depends on: the prompt, the agents' models and the prompt-pack version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: str = Field(min_length=1)
    models: AgentModels
    prompt_pack: str = Field(min_length=1)

    def digest(self) -> str:
        """Stable folder name for this key."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False,
                               separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]


class QARecord(BaseModel):
    """A stored QA set with the records it was built from."""

    model_config = ConfigDict(extra="forbid")

    key: QASetKey
    qa: QASet
    rubric: Rubric | None = None
    verification: Verification | None = None
    proposal: Rubric | None = None
    references: list[ReferenceExtraction] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "QARecord":
        if self.qa.prompt != self.key.prompt:
            raise ValueError(f"QA set prompt {self.qa.prompt!r} differs from key prompt {self.key.prompt!r}")
        if self.rubric is not None and self.verification is not None \
                and self.rubric != self.verification.verified_rubric:
            raise ValueError("rubric differs from the verification's verified rubric")
        return self


_REFERENCES = TypeAdapter(list[ReferenceExtraction])
_OPTIONAL_JSON = {"rubric": ("rubric.json", Rubric), "verification": ("verification.json", Verification),
                  "proposal": ("proposal.json", Rubric)}


class QAStore:
    """A folder of QA records, one subfolder per QASetKey (layout in docs/methods/fager.md)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def path_for(self, key: QASetKey) -> Path:
        """The folder that holds (or would hold) this key's record."""
        return self.root / key.digest()

    def __contains__(self, key: QASetKey) -> bool:
        return (self.path_for(key) / "key.json").is_file()

    def keys(self) -> Iterator[QASetKey]:
        """Every key in the store, in folder-name order."""
        if not self.root.is_dir():
            return
        for folder in sorted(self.root.iterdir()):
            if (folder / "key.json").is_file():
                yield QASetKey.model_validate_json((folder / "key.json").read_text(encoding="utf-8"))

    def get(self, key: QASetKey) -> QARecord | None:
        """The stored record for this key, or None; a corrupt record raises QAFormatError."""
        folder = self.path_for(key)
        if not (folder / "key.json").is_file():
            return None
        stored_key = QASetKey.model_validate_json((folder / "key.json").read_text(encoding="utf-8"))
        if stored_key != key:
            raise QAFormatError(f"{folder}: key.json holds a different key (digest collision or edit)")
        sets = read_qa_csv(folder / "QA.csv")
        if len(sets) != 1:
            raise QAFormatError(f"{folder / 'QA.csv'}: expected one QA set, found {len(sets)}")
        fields: dict[str, object] = {"key": key, "qa": sets[0]}
        for field, (name, model) in _OPTIONAL_JSON.items():
            if (folder / name).is_file():
                fields[field] = model.model_validate_json((folder / name).read_text(encoding="utf-8"))
        if (folder / "references.json").is_file():
            fields["references"] = _REFERENCES.validate_json((folder / "references.json").read_text("utf-8"))
        try:
            return QARecord(**fields)
        except ValidationError as error:
            raise QAFormatError(f"{folder}: {error}") from None

    def put(self, record: QARecord) -> Path:
        """Store a record under its key, replacing any previous one; returns its folder."""
        folder = self.path_for(record.key)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "key.json").unlink(missing_ok=True)  # incomplete until key.json is back
        write_qa_csv([record.qa], folder / "QA.csv")
        for field, (name, _model) in _OPTIONAL_JSON.items():
            value = getattr(record, field)
            if value is None:
                (folder / name).unlink(missing_ok=True)
            else:
                _write_atomic(folder / name, value.model_dump_json(indent=2))
        if record.references is None:
            (folder / "references.json").unlink(missing_ok=True)
        else:
            _write_atomic(folder / "references.json", _REFERENCES.dump_json(record.references, indent=2).decode())
        _write_atomic(folder / "key.json", record.key.model_dump_json(indent=2))  # last: marks it complete
        return folder


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
