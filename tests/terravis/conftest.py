"""Session fixtures of the TerraVis faces: a tiny random Qwen3-VL built offline once, a short
prompt pack, a few small images in two "T2I model" folders, and the Python API's records on
them, which every face must reproduce."""
import json

import pytest

from tvf_helpers import TEST_PACK, make_images


@pytest.fixture(scope="session")
def tiny_model(tiny_vlm_path):
    """The suite's tiny random Qwen3-VL biased towards "Yes" (8 nats)."""
    pytest.importorskip("xgrammar")
    pytest.importorskip("vlmjudge.backends.hf.judge")
    return tiny_vlm_path("qwen3_vl", yes_bias=8.0)


@pytest.fixture(scope="session")
def pack_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pack") / "faces-pack.json"
    path.write_text(json.dumps(TEST_PACK))
    return path


@pytest.fixture(scope="session")
def images(tmp_path_factory):
    return make_images(tmp_path_factory.mktemp("images") / "imgs")


@pytest.fixture(scope="session")
def reference(tiny_model, pack_file, images):
    """The Python API's records, by image id: what every face must reproduce."""
    from terravis import TerraVis
    from vlmjudge import load_judge, to_pil
    tv = TerraVis(load_judge(tiny_model, device="cpu"), pack=pack_file)
    ids = list(images)
    records = tv.score([to_pil(images[i]) for i in ids], ids=ids)
    by_id = dict(zip(ids, records))
    statuses = {r.status for r in records}
    assert statuses == {"scored", "not_applicable"}, f"the tiny model gave no mix of eligibility: {statuses}"
    assert any(r.n_major + r.n_minor for r in records), "the tiny model found no violation at all"
    return by_id
