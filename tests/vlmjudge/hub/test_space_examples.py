"""The Spaces' bundled examples and headers: every example image is the project's own drawing
(metrics/make_examples.py redraws it pixel for pixel), small, and fills one row of its app's
inputs; each app's title and description are the card's."""
import ast
import importlib.util
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from vlmjudge.hub.app import card_header, example_rows, shown_columns
from vlmjudge.registry import get_method

METRICS = Path(__file__).resolve().parents[3] / "metrics"
METHODS = ("terravis", "viescore2", "fager", "regeneration")


def load_script():
    spec = importlib.util.spec_from_file_location("make_examples", METRICS / "make_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def app_examples(method: str) -> list[list]:
    """The EXAMPLES rows an app.py declares, read without running the app."""
    tree = ast.parse((METRICS / method / "app.py").read_text())
    (value,) = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "EXAMPLES" for t in node.targets)]
    return ast.literal_eval(value)


def test_committed_examples_are_the_scripts_drawings_and_small(tmp_path):
    script = load_script()
    written = script.write_examples(tmp_path)
    assert {p.relative_to(tmp_path).as_posix() for p in written} == set(script.EXAMPLES)
    for path in written:
        committed = METRICS / path.relative_to(tmp_path)
        assert committed.stat().st_size < 50_000, committed
        with Image.open(committed) as ours, Image.open(path) as drawn:
            assert ours.size == drawn.size == (script.SIZE, script.SIZE)
            assert ImageChops.difference(ours.convert("RGB"), drawn.convert("RGB")).getbbox() is None, committed


@pytest.mark.parametrize("method", METHODS)
def test_each_app_bundles_examples_that_fill_its_inputs(method):
    rows = app_examples(method)
    assert rows, f"{method}/app.py has no examples"
    columns = shown_columns(get_method(method))
    assert "id" not in columns
    for row in rows:
        assert len(row) == len(columns)
        assert row[0].startswith("examples/")  # the first input is always an image
    resolved = example_rows(METRICS / method, rows)
    assert len(resolved) == len(rows) and all(Path(row[0]).is_file() for row in resolved)


def test_rows_whose_files_are_missing_are_left_out(tmp_path):
    (tmp_path / "examples").mkdir()
    Image.new("RGB", (4, 4)).save(tmp_path / "examples" / "here.png")
    rows = example_rows(tmp_path, [["examples/here.png", "a prompt", None], ["examples/gone.png", "another", None]])
    assert rows == [[str(tmp_path / "examples" / "here.png"), "a prompt", None]]


def test_a_staged_space_without_examples_finds_the_installed_ones(tmp_path):
    """A staged Space folder holds app.py and the wheel; the examples come from the installed modules."""
    from vlmjudge.hub.app import _example_folders
    from vlmjudge.hub.folders import default_metrics_dir

    staged = tmp_path / "terravis"
    staged.mkdir()
    folders = _example_folders(staged)
    assert folders == [staged, default_metrics_dir() / "terravis"]
    rows = example_rows(folders, app_examples("terravis"))
    assert rows == [[str(default_metrics_dir() / "terravis" / row[0])] for row in app_examples("terravis")]


@pytest.mark.parametrize("method, title", [("terravis", "TerraVis"), ("viescore2", "VIEScore2"),
                                           ("fager", "FAGER"), ("regeneration", "Image Regeneration")])
def test_titles_and_descriptions_come_from_the_cards(method, title):
    got_title, description = card_header(METRICS / method / "README.md")
    assert got_title == title
    assert description.startswith(title.split()[-1]) or description.startswith(title)
    assert len(description) > 80 and "\n" not in description.strip()


def test_a_card_without_a_description_gives_its_first_paragraph(tmp_path):
    card = tmp_path / "README.md"
    card.write_text("---\ntitle: Toy Metric\nsdk: gradio\n---\n\n# Metric Card for Toy\n\n"
                    "Toy scores\nphotos.\n\n## Usage\n\nMore text.\n")
    assert card_header(card) == ("Toy Metric", "Toy scores photos.")
