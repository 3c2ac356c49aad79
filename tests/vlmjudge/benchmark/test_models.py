"""Models under test: a folder matched to the suite's ids in both layouts, every way a folder can be
wrong refused in one line, names that can name folders, and seeds that do not depend on the run."""
import subprocess
import sys

import pytest

from vlmjudge.benchmark.api import parse_size
from vlmjudge.benchmark.models import (BenchmarkError, check_distinct, checked_model_name, derive_seed, find_images,
                                       split_named)
from vlmjudge.benchmark.suites import PromptSuite, SuitePrompt

SUITE = PromptSuite("t", [SuitePrompt("cat", "a cat"), SuitePrompt("bus", "a bus"), SuitePrompt("a.b", "dots")])


def touch(folder, *names):
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    return folder


def test_one_image_per_prompt_in_suite_order_with_missing_and_unmatched(tmp_path):
    touch(tmp_path, "bus.JPG", "cat.png", "a.b.webp", "dog.png", "notes.txt", ".hidden.png")
    found = find_images(tmp_path, SUITE)
    assert [(i.id, i.prompt_id, i.k, i.path.name) for i in found.images] == [
        ("cat", "cat", None, "cat.png"), ("bus", "bus", None, "bus.JPG"), ("a.b", "a.b", None, "a.b.webp")]
    assert found.missing == [] and found.unmatched == ["dog.png"] and found.layout == "one"


def test_several_images_per_prompt_get_prompt_slash_k_ids(tmp_path):
    touch(tmp_path, "cat/0.png", "cat/1.png", "cat/10.png", "cat/2.jpg", "bus/0.png")
    found = find_images(tmp_path, SUITE)
    assert [i.id for i in found.images] == ["cat/0", "cat/1", "cat/2", "cat/10", "bus/0"]
    assert found.missing == ["a.b"] and found.layout == "several"


@pytest.mark.parametrize("names, words", [
    (("cat.png", "cat.jpg"), "has 2 images"),
    (("cat.png", "cat/0.png"), "both cat.png and a folder"),
    (("cat.png", "bus/0.png"), "mixes one image per prompt"),
    (("cat/0.png", "cat/0.jpg"), "image '0' has 2 files"),
    (("dog.png", "readme.txt"), "holds no image for any of the suite's 3 prompts"),
])
def test_a_folder_that_cannot_be_read_one_way_is_refused(tmp_path, names, words):
    with pytest.raises(BenchmarkError, match=words):
        find_images(touch(tmp_path, *names), SUITE)


def test_a_missing_folder_and_a_file_for_a_folder_are_refused(tmp_path):
    with pytest.raises(BenchmarkError, match="no such folder"):
        find_images(tmp_path / "nowhere", SUITE)
    touch(tmp_path, "cat.png")
    with pytest.raises(BenchmarkError, match="is a file"):
        find_images(tmp_path / "cat.png", SUITE)


@pytest.mark.parametrize("name", ["", "../up", "a/b", "a b", ".hidden", "x" * 101, "dot.", "naïve", None, 3])
def test_model_names_that_cannot_name_a_folder_are_refused(name):
    with pytest.raises(BenchmarkError, match="cannot name a folder"):
        checked_model_name(name, "--model-images")


def test_named_values_and_distinct_names():
    assert split_named("sd-1.5=a=b", "--generator") == ("sd-1.5", "a=b")
    for text in ("nodir", "=dir", "name="):
        with pytest.raises(BenchmarkError, match="expected NAME=VALUE"):
            split_named(text, "--model-images")
    with pytest.raises(BenchmarkError, match="'SD' is given twice \\(as 'sd'"):
        check_distinct(["sd", "flux", "SD"])


def test_seeds_are_stable_across_processes_and_distinct_across_images():
    here = [derive_seed(3, "00001", k) for k in range(4)]
    code = "from vlmjudge.benchmark.models import derive_seed; print([derive_seed(3, '00001', k) for k in range(4)])"
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout.strip()
    assert str(here) == there
    assert len(set(here)) == 4 and derive_seed(4, "00001", 0) != here[0] and derive_seed(3, "00002", 0) != here[0]


@pytest.mark.parametrize("size, expected", [("64", (64, 64)), ("96x64", (96, 64)), (32, (32, 32)),
                                            ((48, 40), (48, 40))])
def test_sizes(size, expected):
    assert parse_size(size) == expected


@pytest.mark.parametrize("size", ["0", "-4", "nan", "1.5", "64x", "1x2x3", True, "inf"])
def test_bad_sizes_are_refused(size):
    with pytest.raises(BenchmarkError, match="--size"):
        parse_size(size)
