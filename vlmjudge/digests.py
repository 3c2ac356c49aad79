"""A memo of image pixel digests for the length of a block (`digests_held`).

Kept apart from `vlmjudge.images` (which hashes, and consults `HELD`) so that module stays
about converting images.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

#: Digests by id of image object, beside a weak reference to that object, inside a
#: `digests_held` block (None outside any block).
HELD: ContextVar[dict[int, tuple[Any, str]] | None] = ContextVar("vlmjudge_held_digests", default=None)


@contextmanager
def digests_held() -> Iterator[None]:
    """Within this block each PIL image object is hashed once by `image_bytes_digest`.

    A scoring run asks many questions of one image (TerraVis: eligibility, 18 checks,
    evidence, severity), and each request's key hashes its pixels: megabytes per image,
    once per question otherwise. A run, like one judge call, holds its images fixed. The
    memo refers to each image weakly: it keeps no image alive (requests that decode a file
    each make their own object), and an id that a dead image's successor reuses is never
    served the old digest. Nested blocks share the outermost memo. An image changed in place
    inside a block keeps its first digest: do not draw on images being scored.

    Examples:
        >>> from PIL import Image
        >>> from vlmjudge.images import image_bytes_digest
        >>> image = Image.new("RGB", (4, 4), "red")
        >>> with digests_held():
        ...     first = image_bytes_digest(image)
        ...     image.putpixel((0, 0), (0, 0, 255))   # changed in place: the held digest stays
        ...     held = image_bytes_digest(image)
        >>> first == held, image_bytes_digest(image) == first   # outside the block: hashed again
        (True, False)
    """
    if HELD.get() is not None:
        yield
        return
    token = HELD.set({})
    try:
        yield
    finally:
        HELD.reset(token)


def held_digest(img: Any) -> str | None:
    """The digest this block already holds for the image object `img`, without hashing it;
    None outside a block, or for an object not hashed in it. For callers that only want to
    know whether work is already done (a batch planner asking the prefix KV store)."""
    held = HELD.get()
    known = held.get(id(img)) if held is not None else None
    return known[1] if known is not None and known[0]() is img else None
