"""Shared fixtures: the vendored released ABO run (tests/data/fager, MIT)."""
from __future__ import annotations

from pathlib import Path

import pytest

ABO = Path(__file__).resolve().parents[1] / "data" / "fager" / "ABO"


@pytest.fixture(scope="session")
def abo() -> Path:
    """The released ABO folder: QA.csv, intermediate/, results/{real,flux2}/."""
    assert (ABO / "QA.csv").is_file(), f"vendored FAGER data missing under {ABO}"
    return ABO
