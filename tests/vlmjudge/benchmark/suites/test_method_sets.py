"""FAGER's released factual sets (the vendored ABO release, a culture-layout fixture) and Image
Regeneration's reference folders."""
from __future__ import annotations

import csv
import shutil

import pytest

from vlmjudge.benchmark.suites import SuiteFormatError, load_suite


def test_fager_abo_release_reads_its_fifty_prompts_with_brand_tags(abo_folder):
    suite = load_suite("fager", suite_file=abo_folder)
    with open(abo_folder / "prompts.csv", newline="", encoding="utf-8") as handle:
        published = list(csv.DictReader(handle))
    assert len(suite) == 50 == suite.size
    assert suite.ids() == [row["index"] for row in published]
    assert [p.prompt for p in suite.prompts] == [row["prompt"] for row in published]
    assert suite.prompts[0].categories == {"brand": ("Amazon Elements",)}
    assert all(p.reference is None for p in suite.prompts)  # the release ships no reference images
    assert suite.files["qa"].endswith("QA.csv")


def test_fager_leaves_out_the_rows_its_exclude_list_names(abo_folder, tmp_path):
    folder = tmp_path / "ABO"
    folder.mkdir()
    for name in ("prompts.csv", "selected_images_manifest.csv"):
        shutil.copy(abo_folder / name, folder / name)
    (folder / "exclude_index.csv").write_text("index,\n3,\n4,\n")
    ids = load_suite("fager", suite_file=folder / "prompts.csv").ids()
    assert len(ids) == 48 and "3" not in ids and "4" not in ids and ids[:2] == ["1", "5"]


def test_fager_culture_layout_gives_each_prompt_its_reference_by_prompt_text(culture_folder):
    suite = load_suite("fager", suite_file=culture_folder, subset="culture")
    assert suite.ids() == ["1", "2", "3"] and suite.subset == "culture"
    assert [p.reference for p in suite.prompts] == [str(culture_folder / "selected_images" / f"{n}.jpg")
                                                    for n in (1, 2, 3)]


def test_fager_abo_joins_references_by_image_id(abo_folder, tmp_path, make_image):
    folder = tmp_path / "ABO"
    shutil.copytree(abo_folder, folder, ignore=shutil.ignore_patterns("results", "intermediate"))
    with open(folder / "selected_images_manifest.csv", newline="", encoding="utf-8") as handle:
        manifest = list(csv.DictReader(handle))
    for row in manifest:
        make_image(folder / "selected_images" / row["filename"])
    suite = load_suite("fager", suite_file=folder)
    assert suite.prompts[0].reference == str(folder / "selected_images" / "01_e429aab6.jpg")


def test_fager_refuses_a_listed_reference_image_that_is_missing(culture_folder):
    (culture_folder / "selected_images" / "2.jpg").unlink()
    with pytest.raises(SuiteFormatError, match=r"prompts.csv row 3: reference image .*2.jpg does not exist"):
        load_suite("fager", suite_file=culture_folder)


def test_fager_refuses_a_reference_that_is_not_an_image(culture_folder):
    (culture_folder / "selected_images" / "3.jpg").write_text("not a picture")
    with pytest.raises(SuiteFormatError, match="3.jpg is not a readable image"):
        load_suite("fager", suite_file=culture_folder)


def test_fager_refuses_reference_images_without_their_manifest(culture_folder):
    (culture_folder / "selected_images_manifest.csv").unlink()
    with pytest.raises(SuiteFormatError, match="no selected_images_manifest.csv beside it"):
        load_suite("fager", suite_file=culture_folder)


def test_regeneration_reads_a_folder_of_references_with_subfolders_as_categories(tmp_path, make_image):
    root = tmp_path / "refs"
    make_image(root / "loose.png")
    make_image(root / "oil painting" / "harbor.jpg")
    make_image(root / "sketch" / "bridge.webp")
    (root / "README.txt").write_text("not an image, not a reference")
    suite = load_suite("regeneration", suite_file=root)
    assert suite.ids() == ["loose", "harbor", "bridge"]
    assert [p.categories for p in suite.prompts] == [{}, {"category": ("oil painting",)}, {"category": ("sketch",)}]
    assert all(p.prompt == "" and p.reference for p in suite.prompts)


def test_regeneration_refuses_two_references_with_one_id(tmp_path, make_image):
    make_image(tmp_path / "refs" / "a" / "cat.png")
    make_image(tmp_path / "refs" / "b" / "cat.jpg")
    with pytest.raises(SuiteFormatError, match="prompt id 'cat' appears twice"):
        load_suite("regeneration", suite_file=tmp_path / "refs")


def test_regeneration_reads_a_prompts_file_in_the_folder_and_needs_a_reference_on_each_row(tmp_path, make_image):
    make_image(tmp_path / "refs" / "img" / "a.png")
    (tmp_path / "refs" / "prompts.csv").write_text("id,prompt,reference\na,a lighthouse at dusk,img/a.png\n")
    suite = load_suite("regeneration", suite_file=tmp_path / "refs")
    assert suite.prompts[0].prompt == "a lighthouse at dusk"
    assert suite.prompts[0].reference == str(tmp_path / "refs" / "img" / "a.png")
    (tmp_path / "refs" / "prompts.csv").write_text("id,prompt,reference\na,a lighthouse at dusk,\n")
    with pytest.raises(SuiteFormatError, match="have no reference image"):
        load_suite("regeneration", suite_file=tmp_path / "refs")


def test_regeneration_refuses_a_folder_without_images(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SuiteFormatError, match="holds no reference images"):
        load_suite("regeneration", suite_file=tmp_path / "empty")
