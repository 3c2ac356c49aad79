"""What a command-line run takes in: image files and folders, and the check of every image.

One bad-input policy for every method's CLI and the distributed runner: with `on_error="skip"` (the
CLI default) an unreadable or unprocessable image is skipped, counted, reported one per line as
`path: reason` (`vlmjudge.cli.exits`), and written to a failures file beside the output, while the
rest are scored; with `on_error="raise"` (the Python API default) the first one stops the run with
its index and path. Images are checked here, before any model loads, so a bad folder fails fast.
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..images import IMAGE_SUFFIXES, ImageInputError, resolution_note, to_pil
from ..outputs import id_from_name
from .errors import CommandError

ON_ERROR_CHOICES = ("skip", "raise")
#: Files that hold a table or records, never an image: given where images are expected, one clear error.
TABLE_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".txt")


def is_listed_image(path: Path) -> bool:
    """Whether a folder's entry is one of its images: an image file, or a link named like one that
    leads nowhere (a loop, a missing target), listed so that its check names the real reason."""
    return path.suffix.lower() in IMAGE_SUFFIXES and (path.is_file() or path.is_symlink())


def link_problem(path: str | os.PathLike) -> str | None:
    """Why a symbolic link cannot be read as a file (a loop, a missing target), or None.

    Examples:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> loop = os.path.join(folder, "loop.png")
        >>> os.symlink(loop, loop)
        >>> link_problem(loop).startswith("symlink loop")
        True
    """
    path = Path(path)
    if not path.is_symlink():
        return None
    try:
        path.stat()
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "symlink loop: the link leads back to itself"
        if error.errno == errno.ENOENT:
            return f"broken symlink: its target {os.readlink(path)} does not exist"
        return f"unreadable symlink: {path} ({error.strerror})"
    return None


def image_items(inputs: Sequence[str | os.PathLike]) -> list[tuple[str, Path]]:
    """(image id, path) for image files and folders (searched recursively, sorted within each).

    The id is the image's path relative to the input root, with '/' separators and its suffix:
    the root is the folder given, or with several inputs the deepest folder holding them all, so
    `a/cat.png` and `b/cat.png` never share an id. A name that is not UTF-8 is written losslessly
    (`vlmjudge.outputs.id_from_name`: `caf\\xe9.png`, a backslash doubled), so records and reports
    hold text and the id leads back to its file. A folder without images, a missing path or an
    image given twice is a ValueError.

    Examples:
        >>> import tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> for name in ("a/cat.png", "b/cat.png", "b/notes.txt"):
        ...     (root / name).parent.mkdir(exist_ok=True); _ = (root / name).write_bytes(b"")
        >>> [item for item, _ in image_items([root])]
        ['a/cat.png', 'b/cat.png']
        >>> [item for item, _ in image_items([root / "a", root / "b"])]
        ['a/cat.png', 'b/cat.png']
    """
    if not inputs:
        raise ValueError("no image files or folders given")
    found: list[Path] = []
    for raw in inputs:
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if is_listed_image(p))
            if not files:
                raise ValueError(f"no images under {raw} (no image files ending {', '.join(IMAGE_SUFFIXES)})")
            found += files
        elif path.is_file() or path.is_symlink():  # a link that leads nowhere is checked, and its reason listed
            if path.suffix.lower() in TABLE_SUFFIXES:
                raise ValueError(f"{raw} is a {path.suffix.lower()[1:].upper()} file, not an image: this command "
                                 f"takes image files ({', '.join(IMAGE_SUFFIXES)}) or folders of them")
            found.append(path)
        else:
            raise ValueError(f"no such image file or folder: {raw}")
    roots = [Path(raw) if Path(raw).is_dir() else Path(raw).parent for raw in inputs]
    root = roots[0] if len(roots) == 1 else Path(os.path.commonpath([os.path.abspath(r) for r in roots]))
    base = os.path.abspath(root)
    items = [(id_from_name(Path(os.path.relpath(os.path.abspath(p), base)).as_posix()), p) for p in found]
    seen: set[str] = set()
    repeated = [item for item, _ in items if item in seen or seen.add(item)]
    if repeated:
        raise ValueError(f"images given more than once: {repeated[:5]}")
    return items


def looks_like_path(model: str) -> bool:
    """A --model that is meant as a folder: never tried on the Hub (a typo there costs minutes).

    Examples:
        >>> [looks_like_path(m) for m in ("Qwen/Qwen3-VL-8B-Instruct", "./checkpoints/qwen", "models/")]
        [False, True, True]
    """
    return (model.startswith(("/", "./", "../", "~")) or model.endswith("/") or model.count("/") > 1
            or os.path.isabs(model))


@dataclass(frozen=True)
class Failure:
    """One item that got no result: its position in the user's input, its path or id, why, and
    whether it was bad input (skipped unread) or failed to run (the judge gave it no result).

    Examples:
        >>> Failure(3, "images/cat.png", "cannot identify image file", bad_input=True).line()
        'images/cat.png: cannot identify image file'
    """
    index: int
    item: str
    reason: str
    bad_input: bool = False

    def line(self) -> str:
        return f"{self.item}: {self.reason}"


@dataclass
class CheckedImage:
    """An image that passed the checks, with its position in the input and any resolution flag."""
    index: int
    item: str
    image: object
    note: str | None


def check_images(items: Sequence[tuple[str, str | os.PathLike]], on_error: str = "skip"
                 ) -> tuple[list[CheckedImage], list[Failure]]:
    """Decode and size-check every (id, path) before a model loads; bad ones skipped or raised.

    Examples:
        A file that is not an image is skipped and counted; the good one is kept with its position:

        >>> import os, tempfile
        >>> from PIL import Image
        >>> folder = tempfile.mkdtemp()
        >>> Image.new("RGB", (128, 128)).save(os.path.join(folder, "good.png"))
        >>> _ = open(os.path.join(folder, "bad.png"), "wb").write(b"not a png")
        >>> good, bad = check_images([("bad.png", os.path.join(folder, "bad.png")),
        ...                           ("good.png", os.path.join(folder, "good.png"))])
        >>> [(c.index, c.item, c.note) for c in good], [f.index for f in bad]
        ([(1, 'good.png', None)], [0])
    """
    if on_error not in ON_ERROR_CHOICES:
        raise ValueError(f"on_error must be one of {ON_ERROR_CHOICES}, got {on_error!r}")
    good, bad = [], []
    for index, (item_id, path) in enumerate(items):
        try:
            problem = link_problem(path)
            if problem is not None:
                raise ImageInputError(problem, index)
            image = to_pil(path, index=index)
        except ImageInputError as error:
            if on_error == "raise":
                raise ImageInputError(f"{path}: {error.reason}", index) from error
            bad.append(Failure(index, str(path), error.reason, bad_input=True))
            continue
        good.append(CheckedImage(index, str(item_id), image, resolution_note(image)))
    return good, bad




@dataclass
class Screened:
    """What the pre-load check found: the positions that passed, their resolution flags, the failures."""
    kept: list[int] = field(default_factory=list)
    notes: dict[int, str] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)


def screen(items: Sequence[Sequence[str | os.PathLike]], on_error: str = "skip") -> Screened:
    """Check every image of every item (one or more paths) before a model loads.

    An item fails on its first bad image. Images are checked one at a time and not kept, so a
    large folder costs one decode per image and no memory. With `on_error="raise"` the first
    bad image is a `CommandError` naming the item's index in the input and the path.
    """
    result = Screened()
    for index, paths in enumerate(items):
        notes, failed = [], None
        for path in paths:
            try:
                good, bad = check_images([(str(path), path)], on_error)
            except ImageInputError as error:
                raise CommandError(f"item {index}: {error.reason}") from None
            if bad:
                failed = Failure(index, bad[0].item, bad[0].reason, bad_input=True)
                break
            if good[0].note:
                notes.append(good[0].note if len(paths) == 1 else f"{Path(path).name}: {good[0].note}")
        if failed is not None:
            result.failures.append(failed)
            continue
        result.kept.append(index)
        if notes:
            result.notes[index] = "; ".join(notes)
    return result
