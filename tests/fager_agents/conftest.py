"""Fixtures for the FAGER agent tests: the vendored ABO run, a tiny Qwen3-VL judge built once."""
from __future__ import annotations

from pathlib import Path

import pytest

ABO = Path(__file__).resolve().parents[1] / "data" / "fager" / "ABO"


@pytest.fixture(scope="session")
def abo_dir() -> Path:
    """The released ABO folder (QA.csv, prompts.csv, results/{real,flux2}/)."""
    assert (ABO / "QA.csv").is_file(), f"vendored FAGER data missing under {ABO}"
    return ABO


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread while a module's tiny models run: on 2 shared cores more threads only contend."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_vlm_dir(tmp_path_factory, one_thread) -> str:
    """A tiny random Qwen3-VL checkpoint, built offline (once: only test_tiny.py uses it)."""
    from vlmjudge.testing.tiny_vlm import build_tiny_vlm
    return build_tiny_vlm(tmp_path_factory.mktemp("fagent-tiny-vlm") / "qwen3vl", family="qwen3_vl")


@pytest.fixture(scope="module")
def tiny_judge(tiny_vlm_dir):
    """The tiny Qwen3-VL loaded as a transformers judge on CPU."""
    from vlmjudge import load_judge
    return load_judge(tiny_vlm_dir, backend="transformers", device="cpu", batch_size=8)
