"""What a prompt suite is once read (`PromptSuite` of `SuitePrompt`s), the errors a suite raises,
and the checks every reader applies to each prompt before a benchmark sees it.

Ids become file names (`DIR/<prompt id>.png`), so an id that cannot name a file is refused here,
once, for every suite; so are a prompt that is not text, a spreadsheet's "NaN" written where a
prompt was missing, and a reference image that is absent or unreadable.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: Cell text that a spreadsheet or pandas writes for a missing value: never a prompt, id or tag.
MISSING_MARKERS = frozenset({"nan", "-nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity",
                             "none", "null"})


class SuiteError(ValueError):
    """A prompt suite that cannot be used as asked; its message is one line naming what to fix."""


class SuiteFormatError(SuiteError):
    """A suite file that does not follow its published layout (or a value in it that cannot be used)."""


class SuiteUnavailableError(SuiteError):
    """A suite that cannot be fetched here (offline, no network, never published): pass `--suite-file`."""


class UnknownSuiteError(SuiteError):
    """A suite name or subset that is not registered."""


@dataclass(frozen=True)
class SuitePrompt:
    """One prompt of a suite: its id (unique in the suite), its text, its category tags by kind
    (``{"category": ("Animals",), "challenge": ("Basic",)}``) and a reference image path or None.

    Examples:
        >>> p = SuitePrompt("parti_0", "bond", {"category": ("Abstract",), "challenge": ("Basic",)})
        >>> p.categories["challenge"], p.reference
        (('Basic',), None)
    """

    id: str
    prompt: str
    categories: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reference: str | None = None


@dataclass
class PromptSuite:
    """A suite read from its source: its prompts in the published order, and its card's facts.

    `size` is the published size (the number a full, unmodified source holds); `origin` says what
    was read (a cached download or the `suite_file` given), and `files` names each file read.

    Examples:
        >>> suite = PromptSuite("demo", [SuitePrompt("a", "a red cube", {"category": ("Colors",)}),
        ...                              SuitePrompt("b", "two cats", {"category": ("Counting",)})])
        >>> len(suite), suite.ids(), suite.tags("category")
        (2, ['a', 'b'], ['Colors', 'Counting'])
    """

    name: str
    prompts: list[SuitePrompt]
    source: str = ""
    license: str = ""
    citation: str = ""
    size: int | None = None
    subset: str | None = None
    origin: str = ""
    files: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_unique(self.prompts, self.origin or self.name)

    def __len__(self) -> int:
        return len(self.prompts)

    def ids(self) -> list[str]:
        """The prompt ids, in suite order."""
        return [p.id for p in self.prompts]

    def kinds(self) -> list[str]:
        """The kinds of category tag the suite's prompts carry (``category``, ``skill``, ...)."""
        return sorted({kind for p in self.prompts for kind in p.categories})

    def tags(self, kind: str) -> list[str]:
        """Every tag of one kind, sorted."""
        return sorted({tag for p in self.prompts for tag in p.categories.get(kind, ())})


def check_unique(prompts: Iterable[SuitePrompt], where: str) -> None:
    """Refuse a suite with no prompt or with an id used twice (a second image would overwrite the first)."""
    seen: dict[str, int] = {}
    count = 0
    for count, prompt in enumerate(prompts, 1):
        if prompt.id in seen:
            raise SuiteFormatError(f"{where}: prompt id {prompt.id!r} appears twice (entries {seen[prompt.id]} "
                                   f"and {count}); ids must be unique")
        seen[prompt.id] = count
    if not count:
        raise SuiteFormatError(f"{where}: holds no prompts")


def _is_missing_marker(text: str) -> bool:
    return text.strip().lower() in MISSING_MARKERS


def checked_id(value: object, where: str) -> str:
    """A prompt id as text that can name a file; an integer id (JSON's ``3``) becomes ``"3"``.

    Examples:
        >>> checked_id(7, "row 1"), checked_id("coco_301091", "row 2")
        ('7', 'coco_301091')
        >>> checked_id("a/b", "row 3")
        Traceback (most recent call last):
        ...
        vlmjudge.benchmark.suites.suite.SuiteFormatError: row 3: id 'a/b' cannot name an image file (no slash, backslash or NUL; not '.' or '..')
    """
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise SuiteFormatError(f"{where}: id must be text or a whole number, got {type(value).__name__} {value!r}")
    if not value.strip() or _is_missing_marker(value):
        raise SuiteFormatError(f"{where}: id is missing ({value!r})")
    if value != value.strip():
        raise SuiteFormatError(f"{where}: id {value!r} has spaces around it")
    if any(c in value for c in "/\\\0") or value in (".", ".."):
        raise SuiteFormatError(f"{where}: id {value!r} cannot name an image file "
                               "(no slash, backslash or NUL; not '.' or '..')")
    return value


def checked_text(value: object, where: str, what: str = "prompt", *, allow_empty: bool = False) -> str:
    """A prompt (or tag) kept exactly as published; refused when it is not text, is empty, or is a
    missing-value marker such as ``NaN``.

    Examples:
        >>> checked_text("A red colored car.", "row 1")
        'A red colored car.'
        >>> checked_text(float("nan"), "row 2")
        Traceback (most recent call last):
        ...
        vlmjudge.benchmark.suites.suite.SuiteFormatError: row 2: prompt must be text, got float nan
    """
    if not isinstance(value, str):
        raise SuiteFormatError(f"{where}: {what} must be text, got {type(value).__name__} {value!r}")
    if not value.strip():
        if allow_empty:
            return value
        raise SuiteFormatError(f"{where}: {what} is empty")
    if _is_missing_marker(value):
        raise SuiteFormatError(f"{where}: {what} reads {value!r}, a missing value, not a {what}")
    return value


def checked_tags(values: object, where: str, kind: str) -> tuple[str, ...]:
    """Category tags of one kind as a tuple of text: one tag, or a list of them (empty: no tag)."""
    items = [values] if isinstance(values, str) else values
    if not isinstance(items, (list, tuple)):
        raise SuiteFormatError(f"{where}: {kind} must be text or a list of text, got {type(values).__name__}")
    tags = tuple(checked_text(v, where, kind, allow_empty=True) for v in items)
    return tuple(t for t in tags if t.strip())


def checked_reference(value: object, base: Path, where: str) -> str:
    """A reference image path, resolved against `base` when relative; it must be a readable image."""
    from PIL import Image, UnidentifiedImageError

    text = checked_text(value, where, "reference")
    path = Path(os.path.expanduser(text))
    path = path if path.is_absolute() else base / path
    if path.is_dir():
        raise SuiteFormatError(f"{where}: reference {path} is a folder, not an image file")
    if not path.is_file():
        raise SuiteFormatError(f"{where}: reference image {path} does not exist")
    try:
        with Image.open(path):  # reads the header only: a non-image or empty file fails here
            pass
    except (UnidentifiedImageError, OSError) as error:
        raise SuiteFormatError(f"{where}: reference {path} is not a readable image ({type(error).__name__})") from error
    return str(path)
