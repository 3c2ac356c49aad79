"""vlmjudge.images: every accepted kind comes out RGB with the right pixels; every bad input names its index."""

from __future__ import annotations

import hashlib
import io
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from vlmjudge.images import (
    DEFAULT_MAX_PIXELS,
    MAX_PIXELS_ENV,
    ImageInputError,
    image_bytes_digest,
    resolve_max_pixels,
    to_pil,
    to_pil_list,
)


def png_bytes(img: Image.Image, **save_kwargs) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG", **save_kwargs)
    return buf.getvalue()


def two_tone() -> Image.Image:
    """4x2 RGB: left half red, right half blue."""
    img = Image.new("RGB", (4, 2), (255, 0, 0))
    img.paste((0, 0, 255), (2, 0, 4, 2))
    return img


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height, with no pixel data (a bomb's shape)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def px(img: Image.Image, xy=(0, 0)):
    return img.getpixel(xy)


# ---------------------------------------------------------------- accepted kinds


def test_path_str_and_pathlike(tmp_path):
    path = tmp_path / "a.png"
    two_tone().save(path)
    for arg in (str(path), path):
        out = to_pil(arg)
        assert out.mode == "RGB" and out.size == (4, 2)
        assert px(out, (0, 0)) == (255, 0, 0) and px(out, (3, 1)) == (0, 0, 255)


def test_jpeg_path_decodes_to_rgb(tmp_path):
    path = tmp_path / "a.jpg"
    Image.new("RGB", (16, 16), (200, 30, 30)).save(path, quality=95)
    out = to_pil(path)
    assert out.mode == "RGB" and out.size == (16, 16)
    assert all(abs(a - b) <= 3 for a, b in zip(px(out, (8, 8)), (200, 30, 30)))


def test_loaded_file_is_usable_after_close(tmp_path):
    path = tmp_path / "a.png"
    two_tone().save(path)
    out = to_pil(path)
    assert np.asarray(out).shape == (2, 4, 3)  # pixels still there once the file is closed


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, io.BytesIO])
def test_encoded_bytes_and_file_objects(wrap):
    out = to_pil(wrap(png_bytes(two_tone())))
    assert out.size == (4, 2) and px(out, (3, 0)) == (0, 0, 255)


def test_datasets_style_dicts(tmp_path):
    path = tmp_path / "a.png"
    two_tone().save(path)
    assert to_pil({"bytes": png_bytes(two_tone()), "path": None}).size == (4, 2)
    assert to_pil({"bytes": None, "path": str(path)}).size == (4, 2)


def test_exif_orientation_applied():
    # orientation 6: rotate 90 degrees clockwise to display, so the left column becomes the top row
    exif = Image.Exif()
    exif[0x0112] = 6
    out = to_pil(png_bytes(two_tone(), exif=exif))
    assert out.size == (2, 4)
    assert px(out, (0, 0)) == (255, 0, 0) and px(out, (1, 3)) == (0, 0, 255)


def test_rgb_pil_passes_through():
    img = two_tone()
    assert to_pil(img) is img


def test_rgba_composited_on_white():
    img = Image.new("RGBA", (3, 1))
    img.putpixel((0, 0), (0, 0, 0, 0))  # fully transparent -> white
    img.putpixel((1, 0), (10, 20, 30, 255))  # opaque -> unchanged
    img.putpixel((2, 0), (0, 0, 0, 128))  # half black over white: 255 * (1 - 128/255) = 127
    out = to_pil(img)
    assert out.mode == "RGB"
    assert px(out, (0, 0)) == (255, 255, 255)
    assert px(out, (1, 0)) == (10, 20, 30)
    assert px(out, (2, 0)) == (127, 127, 127)


def test_la_composited_on_white():
    img = Image.new("LA", (2, 1))
    img.putpixel((0, 0), (0, 0))
    img.putpixel((1, 0), (40, 255))
    out = to_pil(img)
    assert px(out, (0, 0)) == (255, 255, 255) and px(out, (1, 0)) == (40, 40, 40)


def test_palette_with_and_without_transparency():
    p = Image.new("P", (2, 1))
    p.putpalette([0, 0, 0, 0, 200, 0] + [0] * 762)
    p.putpixel((0, 0), 0)
    p.putpixel((1, 0), 1)
    assert px(to_pil(p), (1, 0)) == (0, 200, 0) and px(to_pil(p), (0, 0)) == (0, 0, 0)
    p.info["transparency"] = 0
    out = to_pil(p)
    assert px(out, (0, 0)) == (255, 255, 255) and px(out, (1, 0)) == (0, 200, 0)


def test_grey_and_bilevel():
    assert px(to_pil(Image.new("L", (2, 2), 77))) == (77, 77, 77)
    assert px(to_pil(Image.new("1", (2, 2), 1))) == (255, 255, 255)
    assert px(to_pil(Image.new("1", (2, 2), 0))) == (0, 0, 0)


def test_16_bit_modes_scaled_to_8_bit():
    a = np.array([[0, 257 * 100, 65535]], dtype=np.uint16)
    img = Image.fromarray(a)
    assert img.mode == "I;16"
    out = to_pil(img)
    assert [px(out, (i, 0))[0] for i in range(3)] == [0, 100, 255]
    # a 16-bit PNG on disk takes the same path
    assert [px(to_pil(png_bytes(img)), (i, 0))[0] for i in range(3)] == [0, 100, 255]
    # mode I (32-bit int) is read as the 16-bit range too
    i32 = Image.fromarray(a.astype(np.int32))
    assert i32.mode == "I"
    assert [px(to_pil(i32), (i, 0))[0] for i in range(3)] == [0, 100, 255]


def test_float_mode_f_in_unit_range():
    img = Image.fromarray(np.array([[0.0, 0.5, 1.0]], dtype=np.float32))
    assert img.mode == "F"
    assert [px(to_pil(img), (i, 0))[0] for i in range(3)] == [0, 128, 255]


def test_cmyk_and_ycbcr():
    cmyk = Image.new("CMYK", (1, 1), (255, 0, 0, 0))  # full cyan
    assert px(to_pil(cmyk)) == (0, 255, 255)
    ycc = Image.new("RGB", (1, 1), (30, 120, 200)).convert("YCbCr")
    assert all(abs(a - b) <= 2 for a, b in zip(px(to_pil(ycc)), (30, 120, 200)))


def test_numpy_hw_and_hwc_uint8():
    assert px(to_pil(np.full((2, 3), 9, np.uint8))) == (9, 9, 9)
    assert px(to_pil(np.full((2, 3, 1), 9, np.uint8))) == (9, 9, 9)
    rgb = np.zeros((2, 3, 3), np.uint8)
    rgb[1, 2] = (1, 2, 3)
    out = to_pil(rgb)
    assert out.size == (3, 2) and px(out, (2, 1)) == (1, 2, 3)
    rgba = np.zeros((1, 1, 4), np.uint8)  # transparent black -> white
    assert px(to_pil(rgba)) == (255, 255, 255)


def test_numpy_float_and_uint16():
    f = np.array([[[0.0, 0.5, 1.0]]], dtype=np.float32)
    assert px(to_pil(f)) == (0, 128, 255)
    assert px(to_pil(np.array([[1.0 + 1e-7]]))) == (255, 255, 255)  # rounding slack
    assert px(to_pil(np.full((1, 1), 257 * 10, np.uint16))) == (10, 10, 10)


def test_numpy_single_batch_in_to_pil():
    assert to_pil(np.zeros((1, 2, 3, 3), np.uint8)).size == (3, 2)


def test_torch_chw_hwc_and_hw():
    chw = torch.zeros(3, 2, 5, dtype=torch.uint8)
    chw[:, 1, 4] = torch.tensor([7, 8, 9], dtype=torch.uint8)
    out = to_pil(chw)
    assert out.size == (5, 2) and px(out, (4, 1)) == (7, 8, 9)
    hwc = chw.permute(1, 2, 0).contiguous()
    assert np.array_equal(np.asarray(to_pil(hwc)), np.asarray(out))
    assert px(to_pil(torch.full((2, 2), 0.5))) == (128, 128, 128)
    assert px(to_pil(torch.ones(1, 2, 2))) == (255, 255, 255)


def test_torch_float_dtypes_and_grad():
    t = torch.full((3, 2, 2), 0.5, requires_grad=True)
    assert px(to_pil(t)) == (128, 128, 128)
    assert px(to_pil(torch.ones(3, 2, 2, dtype=torch.bfloat16))) == (255, 255, 255)
    assert px(to_pil(torch.zeros(3, 2, 2, dtype=torch.float16))) == (0, 0, 0)


def test_torch_rgba_composited():
    t = torch.zeros(4, 1, 1)  # transparent black
    assert px(to_pil(t)) == (255, 255, 255)


def test_torch_single_batch_in_to_pil():
    assert to_pil(torch.zeros(1, 3, 2, 4)).size == (4, 2)


def test_to_pil_list_expands_batches():
    batch = torch.zeros(3, 3, 4, 5)
    batch[2] = 1.0
    out = to_pil_list(batch)
    assert len(out) == 3 and all(im.size == (5, 4) for im in out)
    assert px(out[0]) == (0, 0, 0) and px(out[2]) == (255, 255, 255)
    bhwc = np.zeros((2, 4, 5, 3), np.uint8)
    assert [im.size for im in to_pil_list(bhwc)] == [(5, 4), (5, 4)]


def test_to_pil_list_mixed_kinds(tmp_path):
    path = tmp_path / "a.png"
    two_tone().save(path)
    items = [path, png_bytes(two_tone()), two_tone().convert("L"), np.zeros((2, 2, 3)), torch.zeros(3, 2, 2)]
    out = to_pil_list(items)
    assert len(out) == 5 and all(im.mode == "RGB" for im in out)


def test_to_pil_list_single_image_and_generator():
    assert len(to_pil_list(two_tone())) == 1
    assert len(to_pil_list(np.zeros((2, 2, 3), np.uint8))) == 1
    assert len(to_pil_list(two_tone() for _ in range(2))) == 2


# ---------------------------------------------------------------- errors


def test_error_is_a_value_error_with_index_and_reason():
    with pytest.raises(ImageInputError) as info:
        to_pil(b"", index=7)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.index == 7 and "0 bytes" in err.reason
    assert str(err).startswith("image 7: ")


def truncated_png() -> bytes:
    data = png_bytes(Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)))
    return data[: len(data) // 2]


def bad_inputs(tmp_path):
    (tmp_path / "empty.png").write_bytes(b"")
    trunc = tmp_path / "trunc.png"
    trunc.write_bytes(truncated_png())
    return {
        "corrupt bytes": (b"not an image at all", "corrupt"),
        "truncated file": (trunc, "truncated"),
        "missing file": (tmp_path / "nope.png", "missing file"),
        "directory": (tmp_path, "not a regular file"),
        "empty file": (tmp_path / "empty.png", "0 bytes"),
        "zero bytes": (b"", "0 bytes"),
        "empty path": ("", "empty"),
        "url": ("https://example.com/a.png", "URLs are not fetched"),
        "numpy 1-D": (np.zeros(5, np.uint8), "wrong shape"),
        "numpy 5-D": (np.zeros((1, 1, 2, 2, 3), np.uint8), "wrong shape"),
        "numpy two channels": (np.zeros((4, 4, 2), np.uint8), "channels"),
        "numpy channels first": (np.zeros((3, 8, 8), np.uint8), "channels-first"),
        "numpy batch": (np.zeros((2, 4, 4, 3), np.uint8), "to_pil_list"),
        "numpy NaN": (np.full((2, 2), np.nan), "NaN"),
        "numpy inf": (np.full((2, 2, 3), np.inf, np.float32), "inf"),
        "numpy float above 1": (np.full((2, 2), 255.0), "out of range"),
        "numpy float below 0": (np.full((2, 2), -0.5), "out of range"),
        "numpy int64": (np.zeros((2, 2, 3), np.int64), "unsupported dtype"),
        "numpy bool": (np.zeros((2, 2), bool), "unsupported dtype"),
        "numpy zero size": (np.zeros((0, 4, 3), np.uint8), "zero-size"),
        "tensor batch": (torch.zeros(2, 3, 4, 4), "to_pil_list"),
        "tensor channels": (torch.zeros(2, 4, 5), "channels"),
        "tensor 1-D": (torch.zeros(7), "wrong shape"),
        "tensor NaN": (torch.full((3, 2, 2), float("nan")), "NaN"),
        "tensor out of range": (torch.full((3, 2, 2), 2.0), "out of range"),
        "tensor int64": (torch.zeros(3, 2, 2, dtype=torch.int64), "unsupported dtype"),
        "tensor zero size": (torch.zeros(3, 0, 4), "zero-size"),
        "PIL zero size": (Image.new("RGB", (0, 0)), "zero-size"),
        "PIL F out of range": (Image.new("F", (2, 2), 200.0), "out of range"),
        "PIL I out of 16-bit range": (Image.fromarray(np.full((2, 2), 70000, np.int32)), "out of range"),
        "unsupported type": (12.5, "unsupported type"),
        "nested lists": ([[0, 1], [2, 3]], "unsupported type"),
        "dict without keys": ({"foo": 1}, "'bytes' or 'path'"),
        "text file object": (io.StringIO("abc"), "'rb' mode"),
        "over pixel limit": (np.zeros((300, 300), np.uint8), "over the limit"),
        "header over pixel limit": (png_header_only(8000, 8000), "over the limit"),
        "decompression bomb": (png_header_only(100_000, 100_000), "decompression-bomb"),
    }


def _bad_names() -> list[str]:
    with tempfile.TemporaryDirectory() as d:
        return sorted(bad_inputs(Path(d)))


BAD_NAMES = _bad_names()


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_input_names_its_index(name, tmp_path):
    bad, fragment = bad_inputs(tmp_path)[name]
    good = np.zeros((2, 2, 3), np.uint8)
    with pytest.raises(ImageInputError) as info:
        to_pil_list([good, good, bad], max_pixels=50_000)
    err = info.value
    assert err.index == 2, name
    assert str(err).startswith("image 2: "), str(err)
    assert fragment in err.reason, err.reason


def test_bad_input_in_to_pil_names_given_index(tmp_path):
    with pytest.raises(ImageInputError, match=r"^image 4: missing file"):
        to_pil(tmp_path / "x.png", index=4)


def test_bad_item_inside_tensor_batch_names_its_position():
    batch = torch.zeros(3, 3, 2, 2)
    batch[1, 0, 0, 0] = float("nan")
    with pytest.raises(ImageInputError, match=r"^image 1: .*NaN") as info:
        to_pil_list(batch)
    assert info.value.index == 1


def test_empty_list():
    for empty in ([], (), torch.zeros(0, 3, 2, 2), np.zeros((0, 2, 2, 3), np.uint8)):
        with pytest.raises(ImageInputError, match="empty input") as info:
            to_pil_list(empty)
        assert info.value.index is None


def test_pixel_limit_argument_and_env(monkeypatch):
    img = np.zeros((100, 100), np.uint8)  # 10 000 pixels
    assert to_pil(img, max_pixels=10_000).size == (100, 100)  # the limit itself is allowed
    with pytest.raises(ImageInputError, match="10000 pixels is over the limit of 9999"):
        to_pil(img, max_pixels=9_999)
    monkeypatch.setenv(MAX_PIXELS_ENV, "9999")
    assert resolve_max_pixels() == 9_999
    with pytest.raises(ImageInputError, match=MAX_PIXELS_ENV):
        to_pil(img)
    with pytest.raises(ImageInputError, match="over the limit"):
        to_pil_list([img])
    assert to_pil(img, max_pixels=20_000).size == (100, 100)  # the argument wins over the env var
    monkeypatch.delenv(MAX_PIXELS_ENV)
    assert resolve_max_pixels() == DEFAULT_MAX_PIXELS


@pytest.mark.parametrize("value", ["lots", "0", "-5"])
def test_bad_pixel_limit_setting(monkeypatch, value):
    monkeypatch.setenv(MAX_PIXELS_ENV, value)
    with pytest.raises(ValueError, match=MAX_PIXELS_ENV):
        to_pil(np.zeros((2, 2), np.uint8))


def test_bad_pixel_limit_argument():
    with pytest.raises(ValueError, match="max_pixels"):
        to_pil(np.zeros((2, 2), np.uint8), max_pixels=0)


# ---------------------------------------------------------------- digest


def test_digest_depends_on_pixels_not_encoding():
    img = two_tone()
    from_png = to_pil(png_bytes(img))
    from_array = to_pil(np.asarray(img))
    assert image_bytes_digest(img) == image_bytes_digest(from_png) == image_bytes_digest(from_array)
    changed = img.copy()
    changed.putpixel((0, 0), (254, 0, 0))
    assert image_bytes_digest(changed) != image_bytes_digest(img)


def test_digest_separates_size_and_mode():
    flat = Image.frombytes("RGB", (4, 1), bytes(range(12)))
    tall = Image.frombytes("RGB", (1, 4), bytes(range(12)))
    assert flat.tobytes() == tall.tobytes()
    assert image_bytes_digest(flat) != image_bytes_digest(tall)
    grey = Image.frombytes("L", (4, 3), bytes(range(12)))
    assert image_bytes_digest(grey) != image_bytes_digest(flat)


def test_digest_is_sha256_of_mode_size_and_pixels():
    img = Image.frombytes("RGB", (2, 1), bytes([1, 2, 3, 4, 5, 6]))
    expected = hashlib.sha256(b"vlmjudge-image-v1|RGB|2x1|" + bytes([1, 2, 3, 4, 5, 6])).hexdigest()
    assert image_bytes_digest(img) == expected
    # pinned: request hashes (and the response caches keyed on them) must not drift between releases
    assert expected == "e18ac9af74a0e5aa80f88bfbe05699f13288e8191af8f71c871ac047293c6171"


# ---------------------------------------------------------------- import cost


def test_import_stays_light():
    code = "import sys, vlmjudge.images; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_default_limit_refuses_a_large_header_before_decoding(recwarn):
    # 8000 x 8000 = 64 MP: over our 50 MP default, under Pillow's own warning level
    with pytest.raises(ImageInputError, match="over the limit of 50000000"):
        to_pil(png_header_only(8000, 8000), index=0)
    assert not [w for w in recwarn if issubclass(w.category, Image.DecompressionBombWarning)]
