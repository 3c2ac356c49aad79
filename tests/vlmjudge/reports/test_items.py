"""Where a report finds an item's image (the manifest's inputs, beside the run) and how the cell
reads when the image is there, gone, or not an image."""
from PIL import Image

from vlmjudge.reports.items import find_image, input_roots, model_name, thumb_cell


def test_images_are_found_under_every_input_the_manifest_names(tmp_path):
    Image.new("RGB", (8, 8)).save(tmp_path / "a.png")
    (tmp_path / "table").mkdir()
    (tmp_path / "table" / "items.csv").write_text("index,prompt,image\n")
    Image.new("RGB", (8, 8)).save(tmp_path / "table" / "b.png")
    run = tmp_path / "out" / "results.jsonl"
    run.parent.mkdir()
    manifest = {"inputs": [str(tmp_path / "a.png")], "items": "../table/items.csv"}  # a file; relative to the run
    roots = input_roots(manifest, run)
    assert find_image("a.png", roots) == tmp_path / "a.png"
    assert find_image("b", roots) == tmp_path / "table" / "b.png"  # a stem id finds its file
    assert find_image("c.png", roots) is None


def test_a_cell_names_its_file_with_or_without_a_picture(tmp_path):
    Image.new("RGB", (300, 150), "red").save(tmp_path / "wide.png")
    (tmp_path / "broken.png").write_bytes(b"not a png")
    shown = thumb_cell("cats/wide.png", tmp_path / "wide.png")
    assert 'src="data:image/jpeg;base64,' in shown and "cats/wide.png" in shown
    assert "missing image" in thumb_cell("gone.png", None) and "gone.png" in thumb_cell("gone.png", None)
    unreadable = thumb_cell("broken.png", tmp_path / "broken.png")
    assert "unreadable image" in unreadable and "<img" not in unreadable


def test_the_model_is_the_manifests_never_a_folder():
    assert model_name({"model": "org/judge", "inputs": ["imgs"]}) == "org/judge"
    assert "imgs" not in model_name({"inputs": ["imgs"], "backend": "hf"})
