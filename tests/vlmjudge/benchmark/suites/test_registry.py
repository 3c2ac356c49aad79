"""`load_suite` by name: the registry, the public sources through the Hugging Face caches (offline
reruns from a cached copy, one line naming --suite-file otherwise), and the size check that refuses
a source which changed under its name."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from vlmjudge.benchmark.suites import (SUITES, HubFile, SuiteFormatError, SuiteUnavailableError, UnknownSuiteError,
                                       WebFile, load_suite)
from vlmjudge.benchmark.suites import registry


def test_every_suite_has_a_card():
    assert set(SUITES) == {"genai-bench", "drawbench", "partiprompts", "tifa-v1", "coco-captions", "fager",
                           "regeneration"}
    for spec in SUITES.values():
        assert spec.license and spec.citation and spec.tags and spec.default_subset in spec.subsets
    assert {name: spec.subsets[spec.default_subset].size for name, spec in SUITES.items()} == {
        "genai-bench": 1600, "drawbench": 200, "partiprompts": 1632, "tifa-v1": 4081, "coco-captions": 200,
        "fager": 50, "regeneration": None}
    assert SUITES["genai-bench"].subsets["527"].size == 527 and SUITES["fager"].subsets["culture"].size == 30


def test_an_unknown_suite_or_subset_is_one_line_naming_the_choices(suites_data):
    with pytest.raises(UnknownSuiteError, match="no suite 'parti'; the suites: genai-bench, drawbench"):
        load_suite("parti")
    with pytest.raises(UnknownSuiteError, match="suite 'genai-bench' has no subset '800'; its subsets: 1600, 527"):
        load_suite("genai-bench", suite_file=suites_data / "genai-bench", subset="800")
    with pytest.raises(UnknownSuiteError, match="has no subset '0'"):
        load_suite("coco-captions", subset="0")
    assert load_suite("DrawBench", suite_file=suites_data / "drawbench").name == "drawbench"


@pytest.mark.parametrize("name", sorted(SUITES))
def test_offline_without_a_suite_file_is_one_line_naming_the_flag(offline_env, name):
    with pytest.raises(SuiteUnavailableError) as caught:
        load_suite(name, cache_dir=offline_env)
    message = str(caught.value)
    assert "--suite-file" in message and "\n" not in message and message.startswith(f"suite {name!r}")
    assert isinstance(caught.value, ValueError)


def _tifa_entries(count: int) -> list[dict]:
    return [{"id": f"coco_{n}", "caption": f"caption number {n}", "coco_val_id": str(n)} for n in range(count)]


def _put_in_download_cache(cache: Path, url: str, text: str) -> None:
    from datasets.utils.file_utils import hash_url_to_filename

    cache.mkdir(parents=True, exist_ok=True)
    (cache / hash_url_to_filename(url, etag=None)).write_text(text, encoding="utf-8")


def test_a_pinned_web_file_is_read_from_the_download_cache_offline(offline_env):
    url = SUITES["tifa-v1"].subsets["all"].files["json"].url
    assert "/8e37050f44ab4ee681e4251f3c8a9d4cc86e901e/" in url  # pinned to a commit
    _put_in_download_cache(offline_env, url, json.dumps(_tifa_entries(4081)))
    suite = load_suite("tifa-v1", cache_dir=offline_env)
    assert len(suite) == 4081 and suite.origin.startswith("tifa_v1.0_text_inputs.json of github.com")
    assert suite.files["json"].startswith(str(offline_env))


def test_a_cached_source_that_changed_size_is_refused(offline_env):
    _put_in_download_cache(offline_env, SUITES["tifa-v1"].subsets["all"].files["json"].url,
                           json.dumps(_tifa_entries(4080)))
    with pytest.raises(SuiteFormatError, match="holds 4080 prompts, its card 4081; the source changed"):
        load_suite("tifa-v1", cache_dir=offline_env)


def test_a_pinned_hub_file_is_read_from_the_hub_cache_offline(offline_env, suites_data):
    hub = SUITES["drawbench"].subsets["all"].files["csv"]
    snapshot = offline_env / "datasets--sayakpaul--drawbench" / "snapshots" / hub.revision
    snapshot.mkdir(parents=True)
    rows = [{"Prompts": f"prompt {n}", "Category": "Colors"} for n in range(200)]
    with open(snapshot / hub.path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["Prompts", "Category"])
        writer.writeheader()
        writer.writerows(rows)
    suite = load_suite("drawbench", cache_dir=offline_env)
    assert len(suite) == 200 and suite.ids()[-1] == "drawbench_199" and suite.size == 200


def test_no_network_is_one_line_naming_the_flag(monkeypatch, tmp_path):
    import datasets.utils.file_utils as file_utils
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    for variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(variable, "0")  # online, but the network is down

    def no_network(*args, **kwargs):
        raise ConnectionError("Couldn't reach the server\n(a second line that must not show)")

    def no_hub(*args, **kwargs):
        raise LocalEntryNotFoundError("cannot find the requested files in the local cache")

    monkeypatch.setattr(file_utils, "cached_path", no_network)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_hub)
    with pytest.raises(SuiteUnavailableError, match="download failed, ConnectionError: Couldn't reach the server\\)"):
        load_suite("partiprompts", cache_dir=tmp_path)
    with pytest.raises(SuiteUnavailableError, match="not cached and the Hub is unreachable.*--suite-file"):
        load_suite("genai-bench", cache_dir=tmp_path)


def _fetch_from(files: dict[str, Path]):
    """A stand-in for the download step that serves each role from a local file."""
    def fetch(file: HubFile | WebFile, suite: str, cache_dir=None) -> Path:
        name = file.path if isinstance(file, HubFile) else file.url
        role = next(role for role, path in files.items() if name.endswith(path.name))
        return files[role]
    return fetch


def test_the_published_fager_abo_files_pass_the_size_check(monkeypatch, abo_folder):
    monkeypatch.setattr(registry, "fetch", _fetch_from({role: abo_folder / name for role, name in (
        ("prompts", "prompts.csv"), ("exclude", "exclude_index.csv"), ("manifest", "selected_images_manifest.csv"),
        ("qa", "QA.csv"))}))
    suite = load_suite("fager")
    assert len(suite) == 50 and suite.subset == "abo" and "SGT-LIM/FAGER" in suite.source
    assert all(p.reference is None for p in suite.prompts)


def test_a_published_set_of_the_wrong_size_is_refused(monkeypatch, suites_data):
    folder = suites_data / "fager-culture"
    monkeypatch.setattr(registry, "fetch", _fetch_from({"prompts": folder / "prompts.csv", "manifest":
                                                        folder / "selected_images_manifest.csv", "qa": folder / "QA.csv"}))
    with pytest.raises(SuiteFormatError, match="holds 3 prompts, its card 30; the source changed"):
        load_suite("fager", subset="Culture")


def test_the_published_coco_split_must_hold_its_five_thousand_images(monkeypatch, coco_parquet):
    monkeypatch.setattr(registry, "fetch", _fetch_from({"rows": coco_parquet}))
    with pytest.raises(SuiteFormatError, match="the Karpathy test split has 5000 images, this copy 5"):
        load_suite("coco-captions", subset="3")
