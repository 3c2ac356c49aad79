"""Each report's items as a reader sees them: a small thumbnail with its file name under it, and
the judge's model name as the run's manifest records it.

A table of scores is only useful when a reader can tell which picture each row is about, so every
listed item shows its image (an embedded JPEG, keeping report.html one self-contained file) and
its name. Images are looked for where the record or the manifest says they came from and beside
the run; an image that is gone is named with a "missing image" note instead of a broken picture.
"""
from __future__ import annotations

import base64
import io
import os
from html import escape
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..images import IMAGE_SUFFIXES
from ..outputs import name_from_id
from .page import breakable

#: The longer side of a thumbnail, in pixels.
THUMB_PX = 96
#: Manifest fields naming where a run's images came from: folders, image files, or a table beside them.
INPUT_KEYS = ("input_root", "root", "images", "inputs", "items", "refs", "gens")
#: What a report says when the manifest names no model.
NO_MODEL = "not recorded in the manifest"


def model_name(manifest: Mapping[str, Any] | None) -> str:
    """The judge model a run names in its manifest (`model`), never a folder's name.

    Examples:
        >>> model_name({"model": "Qwen/Qwen2-VL-2B-Instruct", "backend": "hf"}), model_name({})
        ('Qwen/Qwen2-VL-2B-Instruct', 'not recorded in the manifest')
    """
    model = (manifest or {}).get("model")
    return str(model) if model not in (None, "") else NO_MODEL


def _named_paths(value: Any) -> list[str]:
    """The paths a manifest field holds: one string, or a list of them."""
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    if isinstance(value, (list, tuple)):
        return [os.fspath(v) for v in value if isinstance(v, (str, os.PathLike))]
    return []


def input_roots(manifest: Mapping[str, Any] | None, run: str | os.PathLike | None = None) -> list[Path]:
    """The folders an item's relative name may start from: the folders (or a file's own folder) the
    manifest names, each also under the run's folder, the deepest folder holding all of several
    `inputs` (the input root ids are relative to), then the run's folder and the one above it."""
    named = [p for key in INPUT_KEYS for p in _named_paths((manifest or {}).get(key))]
    here = Path(run).resolve().parent if run is not None else None
    roots: list[Path] = []
    for raw in named:
        for path in (Path(raw), *([here / raw] if here is not None and not Path(raw).is_absolute() else [])):
            roots.append((path if path.is_dir() else path.parent).resolve())
    inputs = [os.path.abspath(p) for p in _named_paths((manifest or {}).get("inputs"))]
    if len(inputs) > 1 and len({os.path.splitdrive(p)[0] for p in inputs}) == 1:  # one drive: one common folder
        roots.append(Path(os.path.commonpath(inputs)))
    if here is not None:
        roots += [here, here.parent]
    return list(dict.fromkeys(roots))


def find_image(name: str, roots: Iterable[Path], recorded: str | os.PathLike | None = None) -> Path | None:
    """An item's image file: the recorded path (as is, or under a root), else its name under a root,
    as given or with an image suffix added (names recorded without one); None when none exists.

    Examples:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp()); _ = (root / "cat.png").write_bytes(b"")
        >>> find_image("cat", [root]).name, find_image("dog", [root])
        ('cat.png', None)
    """
    roots = list(roots)
    candidates: list[Path] = []
    if recorded:
        candidates.append(Path(recorded))
        candidates += [root / recorded for root in roots if not Path(recorded).is_absolute()]
    for named in dict.fromkeys([name, *_file_name(name)]):  # the id, and the file name it escapes
        for root in roots:
            candidates.append(root / named)
            candidates += [root / f"{named}{suffix}" for suffix in IMAGE_SUFFIXES]
    return next((path for path in candidates if path.is_file()), None)


def _file_name(item_id: str) -> list[str]:
    """The file name an item id stands for (`vlmjudge.outputs.name_from_id`: a non-UTF-8 name is
    written escaped), or none when no file name can be that id."""
    try:
        return [name_from_id(item_id)]
    except ValueError:  # a surrogate that stands for no byte: the id names no file
        return []


def thumbnail_uri(path: str | os.PathLike, px: int = THUMB_PX) -> str:
    """A data: URI of a JPEG thumbnail (longer side `px`) of the image at `path`; OSError when unreadable."""
    from PIL import Image, ImageOps

    with Image.open(path) as opened:
        image = ImageOps.exif_transpose(opened).convert("RGB")
    image.thumbnail((px, px))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def thumb_cell(name: str, path: Path | None, caption: str = "") -> str:
    """One item's picture as HTML: the thumbnail with the file name under it (wrapping at the name's
    own boundaries, `breakable`, the whole name on hover), or the name with a "missing image" (or
    "unreadable image") note; `caption` (e.g. "reference") goes before the name."""
    label = f"{escape(caption)}: " if caption else ""
    shown = f'<span class="filename" title="{escape(name)}">{label}{breakable(name)}</span>'
    if path is None:
        return f'<div class="thumb"><span class="nopic">missing image</span>{shown}</div>'
    try:
        uri = thumbnail_uri(path)
    except (OSError, ValueError) as error:  # PIL's unreadable-file errors are OSErrors
        return (f'<div class="thumb"><span class="nopic" title="{escape(str(error))}">unreadable image</span>'
                f"{shown}</div>")
    return f'<div class="thumb"><img src="{uri}" alt="{escape(name)}">{shown}</div>'


def item_cell(name: str, roots: Sequence[Path], recorded: str | os.PathLike | None = None, caption: str = "") -> str:
    """`thumb_cell` of the item `name`, its image looked for with `find_image`."""
    return thumb_cell(name, find_image(name, roots, recorded), caption)
