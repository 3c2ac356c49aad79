"""`judge_map` on an imagefolder dataset: columns per method equal the Python API's, a second map
makes no model calls (shared cache), workers of `num_proc` build their own (remote) judges."""
import json
import pickle

import pytest

datasets = pytest.importorskip("datasets")

from integ_helpers import NA_CONFIG, TERRAVIS_CONFIG, regeneration, terravis, write_imagefolder  # noqa: E402
from vlmjudge import get_method, load_judge  # noqa: E402
from vlmjudge.integrations import release_judges  # noqa: E402
from vlmjudge.integrations.datasets import add_judge_columns, judge_map  # noqa: E402


@pytest.fixture
def folder_dataset(tmp_path):
    prompts = write_imagefolder(tmp_path / "images", n=4)
    ds = datasets.load_dataset("imagefolder", data_dir=str(tmp_path / "images"), split="train",
                               cache_dir=str(tmp_path / "hf_cache"))
    assert ds["prompt"][:] == prompts and set(ds.features) == {"image", "reference", "prompt"}
    return ds


def test_map_adds_columns_equal_to_the_python_api(folder_dataset, judge_kwargs, encoders):
    ds = folder_dataset
    fn = judge_map([terravis(), terravis("terravis_na", **NA_CONFIG), regeneration(encoders)], judge_kwargs)
    out = ds.map(fn, batched=True, batch_size=4, with_indices=True, features=fn.features(ds.features))
    for name in ("terravis", "regeneration"):
        for kind in ("score", "normalized", "record"):
            assert f"{name}_{kind}" in out.features
    calls = fn.panel.model_calls()
    assert calls > 0

    images, refs = ds["image"][:], ds["reference"][:]
    api_judge = load_judge(judge_kwargs["model"], device="cpu", batch_size=18)  # no cache: computed afresh
    want_tv = get_method("terravis").build(api_judge, **TERRAVIS_CONFIG).score_batch(
        {"image": images, "id": ["0", "1", "2", "3"]})
    assert out["terravis_record"][:] == [json.dumps(r.to_json()) for r in want_tv]
    assert out["terravis_score"][:] == [r.score for r in want_tv]
    assert out["terravis_normalized"][:] == out["terravis_score"][:]  # TerraVis maps as is
    assert all(0 < s <= 1 for s in out["terravis_score"][:])
    # a pack whose eligibility word the model never says: every row N/A, None scores, records say why
    assert out["terravis_na_score"][:] == out["terravis_na_normalized"][:] == [None] * 4
    assert {json.loads(j)["status"] for j in out["terravis_na_record"][:]} == {"not_applicable"}

    regen = get_method("regeneration").build(None, **regeneration(encoders).config)
    want_rg = regen.score_batch({"reference": refs, "generated": images})
    assert out["regeneration_score"][:] == pytest.approx([r.score for r in want_rg], abs=1e-9)
    assert out["regeneration_normalized"][:] == pytest.approx([r.score / 100 for r in want_rg], abs=1e-9)
    assert len(set(out["regeneration_score"][:])) == 4

    # a second map, as a fresh process would run it (new judge, same cache file): no model calls
    release_judges()
    fresh = pickle.loads(pickle.dumps(fn))
    again = ds.map(fresh, batched=True, batch_size=2, with_indices=True, features=fn.features(ds.features),
                   load_from_cache_file=False)
    assert fresh.panel.model_calls() == 0
    # every answer comes from the first map's cache; the rerun's smaller batches look up more requests
    # than the first map computed (the first computed identical requests of one call once)
    rerun_stats = fresh.panel.judge_of("terravis").stats
    assert rerun_stats.resumed_from_cache >= calls and rerun_stats.reused_within_run == 0
    assert fresh.panel.judge_of("terravis") is not fn.panel.judge_of("terravis")
    assert again["terravis_record"][:] == out["terravis_record"][:]


def test_unscorable_first_batch_needs_the_typed_features(folder_dataset, toys):
    from PIL import Image

    ds = folder_dataset.cast_column("image", datasets.Image(decode=True))
    black = datasets.Dataset.from_dict({"image": [Image.new("RGB", (4, 4))] * 2 + ds["image"][:2]},
                                       features=datasets.Features({"image": datasets.Image()}))
    fn = judge_map(["integ_bright"])
    out = add_judge_columns(black, ["integ_bright"], batch_size=2)
    assert out["integ_bright_score"][:2] == [None, None] and out["integ_bright_score"][2] > 0
    assert out.features["integ_bright_score"] == datasets.Value("float64")
    with pytest.raises(TypeError, match="features="):  # datasets' own error, pointing at features=
        black.map(fn, batched=True, batch_size=2)


def test_map_function_hashes_stably_and_checks_its_input(toys, judge_kwargs):
    from datasets.fingerprint import Hasher

    a = judge_map(["integ_bright"], judge_kwargs, prompt_column="caption")
    b = judge_map(["integ_bright"], dict(judge_kwargs), prompt_column="caption")
    assert Hasher.hash(a) == Hasher.hash(b) != Hasher.hash(judge_map(["integ_bright"], judge_kwargs))
    with pytest.raises(ValueError, match="image_column"):
        a({"picture": [1]})
    with pytest.raises(TypeError, match="batched=True"):
        a({"image": "one.png"})
    with pytest.raises(ValueError, match="no column 'prompt'"):
        judge_map(["viescore2"], judge_kwargs)({"image": [None], "caption": ["a cat"]})


def test_num_proc_workers_build_their_own_remote_judges(folder_dataset, tmp_path, monkeypatch):
    """Each worker of num_proc=2 builds an OpenAI-compatible client to a loopback stub server;
    the shared cache then lets an in-process map run without calls."""
    pytest.importorskip("openai")
    from openai_stub import STUB_KEY_ENV, chat_stub

    ds = folder_dataset.select_columns(["image", "prompt"])
    with chat_stub(monkeypatch) as (server, url):
        remote = {"model": "tiny", "backend": "openai", "base_url": url, "timeout_s": 60,
                  "api_key_env": STUB_KEY_ENV, "cache": str(tmp_path / "shared.sqlite")}
        fn = judge_map(["viescore2"], remote)
        out = ds.map(fn, batched=True, batch_size=2, num_proc=2, with_indices=True,
                     features=fn.features(ds.features))
        calls = len(server.bodies)
        assert calls > 0  # the workers' requests reached the server
        assert fn.panel._scorers == {}  # nothing was built in this process
        again = ds.map(fn, batched=True, batch_size=4, with_indices=True, features=fn.features(ds.features),
                       load_from_cache_file=False)
    assert fn.panel.model_calls() == 0 and len(server.bodies) == calls
    assert again["viescore2_record"][:] == out["viescore2_record"][:]
    assert all(0 <= v <= 1 for v in out["viescore2_normalized"][:] if v is not None)
