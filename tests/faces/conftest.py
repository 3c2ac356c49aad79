"""Session fixtures of the faces suites: tiny random models built offline once, the images, and
the shared resources (one judge with a response cache, one pair of encoders)."""
import pytest

from faces_cases import Resources, write_images


@pytest.fixture(scope="session")
def model_paths(tmp_path_factory):
    """Folders of a tiny Qwen3-VL (yes_bias 0), a tiny CLIP and a tiny DINOv2, and the images."""
    pytest.importorskip("xgrammar")
    from vlmjudge.testing import build_tiny_clip, build_tiny_dinov2, build_tiny_vlm
    root = tmp_path_factory.mktemp("faces_models")
    return {"vlm": str(build_tiny_vlm(root / "qwen3vl", family="qwen3_vl")),
            "clip": str(build_tiny_clip(root / "clip")), "dino": str(build_tiny_dinov2(root / "dino")),
            "cache": str(root / "responses.sqlite"), "images": write_images(root / "images")}


@pytest.fixture(scope="session")
def res(model_paths):
    """The shared judge (its SQLite cache fills as the references run) and encoders."""
    return Resources.load(model_paths)
