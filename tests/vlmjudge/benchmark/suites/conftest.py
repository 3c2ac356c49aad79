"""Fixtures of the suite tests: the published-layout files under tests/data/suites, and the binary
parts built at run time (a Karpathy-split parquet, small reference images)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[3] / "data"
SUITES = DATA / "suites"
ABO = DATA / "fager" / "ABO"

#: Rows of the Karpathy test split's parquet (yerevann/coco-karpathy), made up: (cocoid, split, captions).
COCO_ROWS = [(391895, "test", ["A man with a red helmet on a small moped on a dirt road. ", "Man riding a motor bike."]),
             (522418, "test", ["A woman cutting a large white sheet cake."]),
             (184613, "test", ["A child holding a flowered umbrella and petting a yak."]),
             (318219, "train", ["A person on a ladder painting a wall."]),
             (554625, "test", ["A boy wearing headphones using one computer in a long row of computers."]),
             (397133, "test", ["A man is in a kitchen making pizzas."])]


def write_coco_parquet(path: Path, rows=COCO_ROWS) -> Path:
    """A parquet with the columns and types of yerevann/coco-karpathy's split files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = [{"filepath": "val2014", "sentids": list(range(5 * n, 5 * n + len(captions))),
                "filename": f"COCO_val2014_{cocoid:012d}.jpg", "imgid": n, "split": split,
                "sentences": captions, "cocoid": cocoid,
                "url": f"http://images.cocodataset.org/val2014/COCO_val2014_{cocoid:012d}.jpg"}
               for n, (cocoid, split, captions) in enumerate(rows)]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


def write_image(path: Path, color=(200, 30, 30)) -> Path:
    """A small RGB image, in the format its suffix names."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), color).save(path)
    return path


@pytest.fixture
def suites_data() -> Path:
    return SUITES


@pytest.fixture
def make_coco_parquet():
    """`write_coco_parquet(path, rows=COCO_ROWS)`, for tests that build their own split file."""
    return write_coco_parquet


@pytest.fixture
def make_image():
    """`write_image(path, color)`: a small image file."""
    return write_image


@pytest.fixture
def coco_parquet(tmp_path) -> Path:
    return write_coco_parquet(tmp_path / "coco" / "data" / "test-00000-of-00001.parquet")


@pytest.fixture
def culture_folder(tmp_path) -> Path:
    """FAGER's culture layout with its reference images present under selected_images/."""
    folder = tmp_path / "culture"
    shutil.copytree(SUITES / "fager-culture", folder)
    for n in (1, 2, 3):
        write_image(folder / "selected_images" / f"{n}.jpg", (40 * n, 20, 20))
    return folder


@pytest.fixture
def abo_folder() -> Path:
    assert (ABO / "prompts.csv").is_file(), f"vendored FAGER data missing under {ABO}"
    return ABO


@pytest.fixture
def offline_env(monkeypatch, tmp_path):
    """Hugging Face switched offline, with empty caches of this test's own."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    return tmp_path / "cache"
