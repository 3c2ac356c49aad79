"""Turn any image input a user may hold into an RGB PIL image, or fail clearly.

Paths, encoded bytes, file objects, `datasets` dicts, PIL images, numpy arrays and torch tensors
are accepted; docs/images.md lists the conventions (value ranges, alpha, tensor layouts, EXIF,
the pixel limit against decompression bombs, and the one size rule for every method).
Values outside their range, NaN or inf are errors, never a clipped guess. torch is never
imported here: a tensor can only exist if the caller imported torch, so it is looked up in
`sys.modules`.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from .digests import HELD as _HELD, digests_held, held_digest

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "IMAGE_SUFFIXES",
    "MAX_PIXELS_ENV",
    "MAX_ASPECT_RATIO",
    "RECOMMENDED_MIN_SIDE",
    "ImageInputError",
    "resolution_note",
    "image_bytes_digest",
    "is_image_file",
    "digests_held",
    "resolve_max_pixels",
    "to_pil",
    "to_pil_list",
]

#: Default ceiling on width x height (50 megapixels), well above any T2I output.
DEFAULT_MAX_PIXELS = 50_000_000
#: Environment variable that overrides :data:`DEFAULT_MAX_PIXELS`.
MAX_PIXELS_ENV = "VLMJUDGE_MAX_PIXELS"
#: Longest side over shortest side that processors accept (Qwen-VL's smart_resize refuses more).
MAX_ASPECT_RATIO = 200
#: Below this shortest side an image is still scored, but its record says it was small for a judge.
RECOMMENDED_MIN_SIDE = 64
#: The files a folder of images contributes, everywhere: the CLIs and the distributed runner,
#: the reports' thumbnails, the annotation app and the method packages' folder readers.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")

_FLOAT_SLACK = 1e-5
_WHITE = (255, 255, 255)
_EXIF_ORIENTATION = 0x0112


def is_image_file(path: str | os.PathLike) -> bool:
    """Whether a path names a file with one of `IMAGE_SUFFIXES` (any case).

    Examples:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> _ = open(os.path.join(folder, "cat.PNG"), "wb").write(b"")
        >>> is_image_file(os.path.join(folder, "cat.PNG")), is_image_file(folder), is_image_file("gone.png")
        (True, False, False)
    """
    return Path(path).suffix.lower() in IMAGE_SUFFIXES and Path(path).is_file()


class ImageInputError(ValueError):
    """One error type for every unusable image, naming the item so a batch failure is findable.

    Examples:
        >>> import numpy as np
        >>> try:
        ...     to_pil(np.full((4, 4), 1.5), index=2)
        ... except ImageInputError as error:
        ...     print(error.index, "|", error)
        2 | image 2: float array values out of range [0, 1]: min 1.5, max 1.5
    """

    def __init__(self, reason: str, index: int | None = None):
        self.index = index
        self.reason = reason
        where = "image" if index is None else f"image {index}"
        super().__init__(f"{where}: {reason}")


def resolve_max_pixels(max_pixels: int | None = None) -> int:
    """Pick the pixel limit (argument, then env var, then default) so one rule holds everywhere.

    Examples:
        >>> resolve_max_pixels(1_000_000)
        1000000
    """
    if max_pixels is None:
        raw = os.environ.get(MAX_PIXELS_ENV, "").strip()
        if not raw:
            return DEFAULT_MAX_PIXELS
        try:
            max_pixels = int(raw)
        except ValueError:
            raise ValueError(f"{MAX_PIXELS_ENV}={raw!r} is not an integer") from None
        source = MAX_PIXELS_ENV
    else:
        source = "max_pixels"
    if isinstance(max_pixels, bool) or not isinstance(max_pixels, int) or max_pixels <= 0:
        raise ValueError(f"{source} must be a positive integer, got {max_pixels!r}")
    return max_pixels


def to_pil(x: Any, *, index: int | None = None, max_pixels: int | None = None) -> Image.Image:
    """Convert one image input to an RGB PIL image so every backend sees the same pixels.

    Examples:
        An RGBA array becomes RGB, its transparent pixels composited on white:

        >>> import numpy as np
        >>> image = to_pil(np.full((4, 6, 4), [255, 0, 0, 0], dtype=np.uint8))
        >>> image.mode, image.size, image.getpixel((0, 0))
        ('RGB', (6, 4), (255, 255, 255))
        >>> to_pil(np.zeros((1000, 1000), dtype=np.uint8), max_pixels=10_000)
        Traceback (most recent call last):
        ...
        vlmjudge.images.ImageInputError: image: 1000x1000 = 1000000 pixels is over the limit of 10000 (raise it with max_pixels= or VLMJUDGE_MAX_PIXELS)
    """
    limit = resolve_max_pixels(max_pixels)
    try:
        return _convert(x, limit)
    except _Bad as bad:
        raise ImageInputError(bad.reason, index) from bad.__cause__


def to_pil_list(xs: Any, *, max_pixels: int | None = None) -> list[Image.Image]:
    """Convert a batch (list of mixed kinds, BCHW tensor, BHWC array, or one image) to RGB PIL images.

    Examples:
        A BCHW tensor is a batch of images:

        >>> import torch
        >>> [image.size for image in to_pil_list(torch.zeros(2, 3, 8, 5))]
        [(5, 8), (5, 8)]
    """
    limit = resolve_max_pixels(max_pixels)
    items = _split_batch(xs)
    if not items:
        raise ImageInputError("empty input: no images given")
    return [to_pil(item, index=i, max_pixels=limit) for i, item in enumerate(items)]


def image_bytes_digest(img: Image.Image) -> str:
    """Hash what a model would see (mode, size, pixels), not how the file was encoded, for request keys.

    Inside a `digests_held` block (every judge call, every method run) each image object is
    hashed once.

    Examples:
        The digest follows the pixels, not the file encoding:

        >>> import io
        >>> from PIL import Image
        >>> image = Image.new("RGB", (4, 4), "red")
        >>> png = io.BytesIO(); image.save(png, format="PNG")
        >>> image_bytes_digest(image) == image_bytes_digest(to_pil(png.getvalue()))
        True
        >>> image_bytes_digest(image) == image_bytes_digest(Image.new("RGB", (4, 4), "blue"))
        False
    """
    if not isinstance(img, Image.Image):
        img = to_pil(img)
    known = held_digest(img)
    if known is not None:
        return known
    h = hashlib.sha256()
    h.update(f"vlmjudge-image-v1|{img.mode}|{img.width}x{img.height}|".encode())
    h.update(img.tobytes())
    digest = h.hexdigest()
    held = _HELD.get()
    if held is not None:
        held[id(img)] = (weakref.ref(img), digest)
    return digest


# ---------------------------------------------------------------------------
# internals


class _Bad(Exception):
    """Carries a reason up to to_pil, which adds the item index."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _torch_tensor_type():
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None) if torch is not None else None


def _is_tensor(x: Any) -> bool:
    tensor_type = _torch_tensor_type()
    return tensor_type is not None and isinstance(x, tensor_type)


def _split_batch(xs: Any) -> list[Any]:
    if _is_tensor(xs):
        return list(xs.unbind(0)) if xs.dim() == 4 else [xs]
    if isinstance(xs, np.ndarray):
        return list(xs) if xs.ndim == 4 else [xs]
    if isinstance(xs, (str, bytes, bytearray, memoryview, os.PathLike, Image.Image, Mapping)):
        return [xs]
    if hasattr(xs, "read"):
        return [xs]
    if isinstance(xs, Iterable):
        return list(xs)
    return [xs]


def _convert(x: Any, limit: int) -> Image.Image:
    if isinstance(x, Image.Image):
        return _from_pil(x, limit, source="PIL image")
    if isinstance(x, (str, os.PathLike)):
        return _from_path(x, limit)
    if isinstance(x, (bytes, bytearray, memoryview)):
        return _from_encoded(io.BytesIO(bytes(x)), limit, what="image bytes", size=len(x))
    if isinstance(x, Mapping):
        return _from_mapping(x, limit)
    if isinstance(x, np.ndarray):
        if x.ndim == 4 and x.shape[0] == 1:
            x = x[0]
        return _from_array(x, limit, kind="array", channels_first=False)
    if _is_tensor(x):
        return _from_tensor(x, limit)
    if hasattr(x, "read"):
        data = x.read()
        if not isinstance(data, (bytes, bytearray)):
            raise _Bad(f"file object returned {type(data).__name__}, expected bytes (open it in 'rb' mode)")
        return _from_encoded(io.BytesIO(bytes(data)), limit, what="image file object", size=len(data))
    raise _Bad(
        f"unsupported type {type(x).__module__}.{type(x).__qualname__}; expected a path, bytes, "
        "PIL image, numpy array or torch tensor"
    )


def _from_mapping(x: Mapping, limit: int) -> Image.Image:
    data, path = x.get("bytes"), x.get("path")
    if data is not None:
        return _convert(bytes(data), limit)
    if path is not None:
        return _from_path(path, limit)
    raise _Bad(f"dict input needs a 'bytes' or 'path' entry, got keys {sorted(map(str, x))}")


def _from_path(path: str | os.PathLike, limit: int) -> Image.Image:
    name = os.fspath(path)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if not name:
        raise _Bad("empty input: empty path")
    if name.startswith(("http://", "https://")):
        raise _Bad(f"URLs are not fetched, download the file first: {name}")
    if not os.path.exists(name):
        raise _Bad(f"missing file: {name}")
    if not os.path.isfile(name):
        raise _Bad(f"not a regular file: {name}")
    size = os.path.getsize(name)
    with open(name, "rb") as fh:
        return _from_encoded(fh, limit, what=f"file {name}", size=size)


def _from_encoded(fp: Any, limit: int, *, what: str, size: int) -> Image.Image:
    if size == 0:
        raise _Bad(f"empty input: {what} has 0 bytes")
    try:
        img = Image.open(fp)
    except Image.DecompressionBombError as err:
        raise _Bad(f"{what} is over Pillow's decompression-bomb limit ({err})") from err
    except UnidentifiedImageError as err:
        raise _Bad(f"corrupt or unrecognised {what}: not a known image format") from err
    except (OSError, ValueError, SyntaxError) as err:
        raise _Bad(f"corrupt or unrecognised {what}: {err}") from err
    try:
        _check_size(img.width, img.height, limit)
        try:
            img.load()
        except (OSError, ValueError, SyntaxError, EOFError) as err:
            raise _Bad(f"corrupt or truncated {what}: {err}") from err
        out = _from_pil(img, limit, source=what)
        # detach from the file before closing it: close() invalidates the pixel store
        return img.copy() if out is img else out
    finally:
        img.close()


def resolution_note(img: Image.Image) -> str | None:
    """A flag for an image smaller than judges are made for (scored all the same), or None.

    Examples:
        >>> from PIL import Image
        >>> resolution_note(Image.new("RGB", (512, 512))) is None
        True
        >>> resolution_note(Image.new("RGB", (32, 200))).startswith("low resolution: 32x200")
        True
    """
    if min(img.size) < RECOMMENDED_MIN_SIDE:
        return (f"low resolution: {img.width}x{img.height} is below the recommended "
                f"{RECOMMENDED_MIN_SIDE} px on its shorter side; the judge sees mostly upscaling")
    return None


def _check_size(width: int, height: int, limit: int) -> None:
    if width <= 0 or height <= 0:
        raise _Bad(f"empty input: zero-size image ({width}x{height})")
    if max(width, height) > MAX_ASPECT_RATIO * min(width, height):
        raise _Bad(f"{width}x{height} has an aspect ratio over {MAX_ASPECT_RATIO}:1, "
                   "which vision processors cannot take")
    if width * height > limit:
        raise _Bad(
            f"{width}x{height} = {width * height} pixels is over the limit of {limit} "
            f"(raise it with max_pixels= or {MAX_PIXELS_ENV})"
        )


def _from_pil(img: Image.Image, limit: int, *, source: str) -> Image.Image:
    _check_size(img.width, img.height, limit)
    try:
        img.load()
    except (OSError, ValueError, SyntaxError, EOFError) as err:
        raise _Bad(f"corrupt or truncated {source}: {err}") from err
    img = _apply_exif_orientation(img)
    return _pil_to_rgb(img)


def _apply_exif_orientation(img: Image.Image) -> Image.Image:
    try:
        orientation = img.getexif().get(_EXIF_ORIENTATION, 1)
    except Exception as err:  # Pillow raises assorted types on malformed EXIF blocks
        raise _Bad(f"unreadable EXIF data: {err}") from err
    if orientation in (None, 1):
        return img
    try:
        return ImageOps.exif_transpose(img)
    except Exception as err:  # same: surface it rather than guess the orientation
        raise _Bad(f"could not apply EXIF orientation {orientation}: {err}") from err


def _pil_to_rgb(img: Image.Image) -> Image.Image:
    mode = img.mode
    if mode == "RGB":
        return img
    if mode in ("RGBA", "LA", "PA", "RGBa", "La") or (mode == "P" and "transparency" in img.info):
        return _composite_on_white(img)
    if mode.startswith("I;16") or mode == "I":
        return _from_array(np.asarray(img), limit=None, kind=f"PIL {mode} image", channels_first=False)
    if mode == "F":
        return _from_array(np.asarray(img), limit=None, kind="PIL F image", channels_first=False)
    if mode == "1":
        return img.convert("L").convert("RGB")
    try:
        return img.convert("RGB")
    except ValueError as err:
        raise _Bad(f"unsupported PIL mode {mode!r}: {err}") from err


def _composite_on_white(img: Image.Image) -> Image.Image:
    mode = img.mode
    if mode == "La":  # premultiplied grey+alpha: Pillow converts it only via LA
        img = img.convert("LA")
    rgba = img.convert("RGBA")
    background = Image.new("RGBA", rgba.size, _WHITE + (255,))
    return Image.alpha_composite(background, rgba).convert("RGB")


def _from_tensor(t: Any, limit: int) -> Image.Image:
    import torch  # already imported by the caller, or t could not be a tensor

    t = t.detach()
    if t.is_complex():
        raise _Bad(f"unsupported tensor dtype {t.dtype}")
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    shape = tuple(t.shape)
    if t.dim() == 4:
        if shape[0] != 1:
            raise _Bad(f"tensor batch of {shape[0]} images {shape}; use to_pil_list for batches")
        t, shape = t[0], shape[1:]
    if t.dim() == 3:
        channels_first = shape[0] in (1, 3, 4)
    elif t.dim() == 2:
        channels_first = False
    else:
        raise _Bad(f"wrong shape {shape} for a tensor: expected HW, CHW, HWC or BCHW")
    return _from_array(t.cpu().numpy(), limit, kind="tensor", channels_first=channels_first)


def _from_array(a: np.ndarray, limit: int | None, *, kind: str, channels_first: bool) -> Image.Image:
    shape = a.shape
    if a.size == 0:
        raise _Bad(f"empty input: zero-size {kind} {shape}")
    if a.ndim == 3 and channels_first:
        a = np.moveaxis(a, 0, -1)
    elif a.ndim == 3 and a.shape[-1] not in (1, 3, 4):
        if kind == "tensor":
            expected = "1, 3 or 4 channels first (CHW) or last (HWC)"
        else:
            expected = "1, 3 or 4 channels last (HWC)"
            if a.shape[0] in (1, 3, 4):
                expected += "; this looks channels-first, transpose it"
        raise _Bad(f"wrong number of channels in {kind} {shape}: expected {expected}")
    elif a.ndim == 4:
        raise _Bad(f"{kind} batch of {shape[0]} images {shape}; use to_pil_list for batches")
    elif a.ndim not in (2, 3):
        raise _Bad(f"wrong shape {shape} for a {kind}: expected HW or HWC")
    if limit is not None:
        _check_size(a.shape[1], a.shape[0], limit)
    a8 = _to_uint8(a, kind)
    if a8.ndim == 3 and a8.shape[-1] == 1:
        a8 = a8[..., 0]
    if a8.ndim == 2:
        return Image.fromarray(a8, mode=None).convert("RGB")
    if a8.shape[-1] == 4:
        return _composite_on_white(Image.fromarray(np.ascontiguousarray(a8)))
    return Image.fromarray(np.ascontiguousarray(a8))


def _to_uint8(a: np.ndarray, kind: str) -> np.ndarray:
    dt = a.dtype
    if dt == np.uint8:
        return a
    if dt.kind == "f":
        if not np.isfinite(a).all():
            raise _Bad(f"{kind} holds NaN or inf values")
        lo, hi = float(a.min()), float(a.max())
        if lo < -_FLOAT_SLACK or hi > 1 + _FLOAT_SLACK:
            raise _Bad(f"float {kind} values out of range [0, 1]: min {lo:g}, max {hi:g}")
        return np.rint(np.clip(a.astype(np.float64), 0.0, 1.0) * 255.0).astype(np.uint8)
    if dt.kind in "iu" and dt.itemsize >= 2 and (dt == np.uint16 or kind.startswith("PIL I")):
        lo, hi = int(a.min()), int(a.max())
        if lo < 0 or hi > 65535:
            raise _Bad(f"16-bit {kind} values out of range [0, 65535]: min {lo}, max {hi}")
        return np.rint(a.astype(np.float64) / 257.0).astype(np.uint8)
    raise _Bad(f"unsupported dtype {dt} for a {kind}: use uint8, uint16, or float in [0, 1]")
