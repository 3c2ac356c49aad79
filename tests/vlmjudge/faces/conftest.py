"""Session fixtures of the faces suites: the suite's shared tiny random models, the images, and
the shared resources (one judge with a response cache, one pair of encoders)."""
import pytest

from faces_cases import Resources, write_images


@pytest.fixture(scope="session")
def model_paths(tmp_path_factory, tiny_vlm_path, tiny_encoder_dirs):
    """Folders of the suite's shared tiny Qwen3-VL (yes_bias 0), tiny CLIP and tiny DINOv2, and
    this folder's own response cache and images."""
    pytest.importorskip("xgrammar")
    root = tmp_path_factory.mktemp("faces_data")
    return {"vlm": tiny_vlm_path("qwen3_vl"), "clip": tiny_encoder_dirs["clip"], "dino": tiny_encoder_dirs["dino"],
            "cache": str(root / "responses.sqlite"), "images": write_images(root / "images")}


@pytest.fixture(scope="session")
def res(model_paths):
    """The shared judge (its SQLite cache fills as the references run) and encoders."""
    return Resources.load(model_paths)
