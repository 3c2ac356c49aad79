"""Draw the example images the Spaces offer (metrics/<name>/examples/*.png): `python metrics/make_examples.py`.

The project draws them itself with PIL, so they carry no third-party licence: flat shapes on
gradients, 256 x 256, a few kB each. Each scene is a function of a few parameters, so the
regeneration pair is one scene drawn twice with small differences, and the TerraVis pair shows a
plausible scene beside one that breaks the physical world (a floating house, two suns).
"""
from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image, ImageDraw

SIZE = 256
HERE = Path(__file__).resolve().parent


def gradient(top: tuple[int, int, int], bottom: tuple[int, int, int], height: int = SIZE) -> Image.Image:
    """A vertical colour gradient from `top` to `bottom`."""
    image = Image.new("RGB", (SIZE, height))
    draw = ImageDraw.Draw(image)
    for y in range(height):
        t = y / max(height - 1, 1)
        draw.line([(0, y), (SIZE, y)], fill=tuple(round(a + (b - a) * t) for a, b in zip(top, bottom)))
    return image


def cottage(*, floating: bool = False, suns: int = 1) -> Image.Image:
    """A cottage with a tree on a meadow; `floating` lifts the house off the ground, `suns` adds suns."""
    image = gradient((110, 170, 235), (200, 225, 250))
    draw = ImageDraw.Draw(image)
    for i in range(suns):
        x = 40 + i * 150
        draw.ellipse([x - 18, 22, x + 18, 58], fill=(255, 220, 80))
    draw.rectangle([0, 180, SIZE, SIZE], fill=(90, 160, 70))
    lift = 70 if floating else 0
    base = 190 - lift
    draw.polygon([(150, 190), (236, 190), (236, 196), (150, 196)], fill=(60, 110, 50))  # shadow, on the ground
    draw.rectangle([70, base - 60, 150, base], fill=(225, 205, 170), outline=(120, 90, 60))
    draw.polygon([(60, base - 60), (110, base - 100), (160, base - 60)], fill=(170, 60, 50))
    draw.rectangle([102, base - 30, 118, base], fill=(110, 70, 40))
    for x in (80, 128):
        draw.rectangle([x, base - 48, x + 14, base - 34], fill=(160, 200, 230), outline=(90, 70, 50))
    draw.rectangle([192, 130, 202, 190], fill=(110, 75, 45))
    draw.ellipse([170, 90, 224, 144], fill=(50, 130, 60))
    return image


def lighthouse(*, shift: int = 0, stripes: tuple[int, int, int] = (200, 40, 40), rocks: bool = True) -> Image.Image:
    """A striped lighthouse on a shore at dusk; `shift` moves it sideways, `stripes` recolours it."""
    image = gradient((70, 50, 120), (250, 150, 90), height=SIZE)
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 170, SIZE, SIZE], fill=(40, 70, 120))
    for y in range(178, SIZE, 12):
        draw.line([(10, y), (SIZE - 10, y)], fill=(70, 100, 150))
    if rocks:
        draw.polygon([(60 + shift, 200), (120 + shift, 150), (200 + shift, 160), (230 + shift, 205)],
                     fill=(90, 85, 80))
    left, right, top = 118 + shift, 158 + shift, 60
    draw.polygon([(left - 6, 170), (right + 6, 170), (right, top), (left, top)], fill=(240, 240, 235))
    for k in range(4):
        y0 = top + 10 + k * 27
        draw.rectangle([left - 4 + k, y0, right + 4 - k, y0 + 12], fill=stripes)
    draw.rectangle([left + 4, top - 22, right - 4, top], fill=(255, 235, 120), outline=(40, 40, 40))
    draw.polygon([(left, top - 22), (right, top - 22), ((left + right) // 2, top - 40)], fill=(40, 40, 40))
    return image


def apples(count: int = 3) -> Image.Image:
    """`count` red apples on a white plate on a wooden table."""
    image = Image.new("RGB", (SIZE, SIZE), (150, 100, 60))
    draw = ImageDraw.Draw(image)
    for y in range(8, SIZE, 22):
        draw.line([(0, y), (SIZE, y + 6)], fill=(125, 80, 45), width=3)
    draw.ellipse([28, 70, 228, 210], fill=(245, 245, 242), outline=(200, 200, 200), width=3)
    for i in range(count):
        x = 70 + i * 58
        y = 115 + (i % 2) * 18
        draw.ellipse([x - 26, y - 24, x + 26, y + 26], fill=(200, 30, 35))
        draw.ellipse([x - 14, y - 16, x - 4, y - 6], fill=(235, 120, 120))
        draw.line([(x, y - 22), (x + 4, y - 36)], fill=(90, 60, 30), width=3)
        draw.ellipse([x + 4, y - 40, x + 20, y - 30], fill=(70, 150, 60))
    return image


#: metrics/<name>/examples/<file> -> how it is drawn.
EXAMPLES = {
    "terravis/examples/cottage.png": lambda: cottage(),
    "terravis/examples/floating_house.png": lambda: cottage(floating=True, suns=2),
    "viescore2/examples/lighthouse.png": lambda: lighthouse(),
    "fager/examples/three_apples.png": lambda: apples(3),
    "regeneration/examples/lighthouse_reference.png": lambda: lighthouse(),
    "regeneration/examples/lighthouse_regenerated.png": lambda: lighthouse(shift=-14, stripes=(40, 60, 170),
                                                                             rocks=False),
}


def write_examples(root: Path = HERE) -> list[Path]:
    """Draw every example under `root` (the metrics/ folder by default); returns the paths written."""
    written = []
    for relative, draw in EXAMPLES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        draw().save(path, optimize=True)
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_examples(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(f"{written_path} ({written_path.stat().st_size} bytes)")
