"""The labelling store and its items without a browser: folders and CSVs list the items, each
submit is one JSON line, an annotator resumes at their first unlabelled item, labels check their
fields against the method's protocol, and the file loads as a `datasets.Dataset`."""
import json

import pytest
from PIL import Image

from vlmjudge.annotation import AnnotationField, AnnotationProtocol, Item, Option, make_label
from vlmjudge.hub.annotate import (grid_cell, items_from_csv, items_from_folders, next_index,
                                   paint_grid, progress_text, toggle_cell)
from vlmjudge.hub.labels import AnnotationSetupError, LabelStore
from vlmjudge.outputs import iter_jsonl
from vlmjudge.registry import get_method

METHODS = ("terravis", "viescore2", "fager", "regeneration")


def save(path, colour=(200, 30, 30), size=(40, 30)):
    """Write a flat test image, folders included."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)
    return path


def rating_protocol():
    """A toy protocol with a flag that switches a rating and a checklist on and off."""
    return AnnotationProtocol("toy", (
        AnnotationField("ok", "flag", "OK", default=True),
        AnnotationField("rating", "rating", "Rating", low=1, high=5, only_if="ok"),
        AnnotationField("issues", "checklist", "Issues", levels=("minor", "major"), only_if="ok",
                        options=(Option("blur", "Blur"), Option("text", "Text"))),
    ))


def test_every_method_declares_a_protocol_named_after_it():
    for name in METHODS:
        protocol = get_method(name).annotation
        assert isinstance(protocol, AnnotationProtocol) and protocol.method == name and protocol.fields


def test_single_view_items_are_every_image_by_relative_path_with_sidecar_prompts(tmp_path):
    save(tmp_path / "b.png")
    save(tmp_path / "sub" / "a.jpg")
    (tmp_path / "sub" / "a.txt").write_text("a red square\n")
    (tmp_path / "notes.txt").write_text("not an image")
    items = items_from_folders(tmp_path, ("image",))
    assert [(i.id, i.prompt) for i in items] == [("b.png", None), ("sub/a.jpg", "a red square")]
    assert items[1].images == {"image": "sub/a.jpg"}


def test_folders_list_every_image_kind_scoring_takes(tmp_path):
    """The app reads folders by the suffixes scoring reads (`vlmjudge.images.IMAGE_SUFFIXES`):
    .gif and .tif included, in any case."""
    from vlmjudge.images import IMAGE_SUFFIXES
    names = sorted(f"img{k}{suffix.upper() if k % 2 else suffix}" for k, suffix in enumerate(IMAGE_SUFFIXES))
    for name in names:
        save(tmp_path / name)
    (tmp_path / "table.csv").write_text("a,b\n")
    assert [i.id for i in items_from_folders(tmp_path, ("image",))] == names
    assert {".gif", ".tif"} <= {"." + name.rpartition(".")[2].lower() for name in names}


def test_pairs_join_folders_by_stem_and_refuse_a_lonely_image(tmp_path):
    for folder in ("reference", "regenerated"):
        save(tmp_path / folder / "cat.png")
        save(tmp_path / folder / "dog.png")
    items = items_from_folders(tmp_path, ("reference", "regenerated"))
    assert [i.id for i in items] == ["reference/cat.png", "reference/dog.png"]
    assert items[0].images == {"reference": "reference/cat.png", "regenerated": "regenerated/cat.png"}
    save(tmp_path / "x" / "cat.png"), save(tmp_path / "y" / "cow.png")
    with pytest.raises(ValueError, match="without a partner"):
        items_from_folders(tmp_path, ("A", "B"), folders=("x", "y"))
    with pytest.raises(AnnotationSetupError, match="no folder 'A'"):
        items_from_folders(tmp_path, ("A", "B"))


def test_csv_items_keep_row_order_and_prompts(tmp_path):
    save(tmp_path / "one" / "p1.png"), save(tmp_path / "two" / "p1.png"), save(tmp_path / "one" / "p0.png")
    save(tmp_path / "two" / "p0.png")
    table = tmp_path / "items.csv"
    table.write_text("A,B,prompt\none/p1.png,two/p1.png,three apples\none/p0.png,two/p0.png,\n")
    items = items_from_csv(tmp_path, table, ("A", "B"))
    assert [(i.id, i.prompt) for i in items] == [("one/p1.png", "three apples"), ("one/p0.png", None)]
    table.write_text("A,prompt\none/p1.png,x\n")
    with pytest.raises(ValueError, match="missing \\['B'\\]"):
        items_from_csv(tmp_path, table, ("A", "B"))


def test_store_writes_one_line_per_label_and_resumes_per_annotator(tmp_path):
    protocol = rating_protocol()
    items = [Item(f"{k}.png", {"image": f"{k}.png"}) for k in range(4)]
    store = LabelStore(tmp_path / "labels" / "out.jsonl", "toy")
    assert next_index(items, store.labelled("ann")) == 0
    for k, rating in ((0, 4), (2, 2)):
        store.add(make_label(protocol, items[k], " ann ", {"ok": True, "rating": rating, "issues": []}))
    lines = (tmp_path / "labels" / "out.jsonl").read_text().splitlines()
    assert len(lines) == 2 and [json.loads(line)["rating"] for line in lines] == [4, 2]
    again = LabelStore(store.path, "toy")  # a restarted app reads the same file
    assert again.labelled("ann") == {"0.png", "2.png"}
    assert next_index(items, again.labelled("ann")) == 1  # a gap is filled first
    assert next_index(items, again.labelled("bob")) == 0
    with pytest.raises(AnnotationSetupError, match="out.jsonl:1: a toy label, not other"):
        LabelStore(store.path, "other")  # another method's labels go to their own file
    store.add(make_label(protocol, items[1], "ann", {"ok": False}))
    store.add(make_label(protocol, items[3], "ann", {"ok": True, "rating": 5, "issues": []}))
    assert next_index(items, again.labelled("ann")) == 4
    assert progress_text(2, 10, "ann").startswith("**item 3 of 10**")
    assert progress_text(4, 4, "ann").startswith("All 4 items are labelled")


def test_a_broken_line_is_reported_not_skipped(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"id": "a.png", "annotator": "x", "method": "toy"}\n\n{"id": \n')
    with pytest.raises(AnnotationSetupError, match="labels.jsonl:3: not valid JSON"):
        LabelStore(path, "toy")


def test_labels_check_their_fields_and_null_what_a_flag_turns_off():
    protocol, item = rating_protocol(), Item("a.png", {"image": "a.png"}, "a prompt")
    label = make_label(protocol, item, "ann", {"ok": True, "rating": 3.0, "issues": [
        (Option("blur", "Blur"), True, "major"), (Option("text", "Text"), False, None)]})
    assert label["rating"] == 3 and label["issues"] == [{"type": "blur", "severity": "major"}]
    assert label["prompt"] == "a prompt" and label["method"] == "toy" and "images" not in label
    assert label["timestamp"].endswith("+00:00")
    off = make_label(protocol, item, "ann", {"ok": False, "rating": 3})
    assert off["ok"] is False and off["rating"] is None and off["issues"] is None
    with pytest.raises(ValueError, match="please give rating"):
        make_label(protocol, item, "ann", {"ok": True, "rating": None, "issues": []})
    with pytest.raises(ValueError, match="1..5"):
        make_label(protocol, item, "ann", {"ok": True, "rating": 6, "issues": []})
    with pytest.raises(ValueError, match="minor or major for 'Blur'"):
        make_label(protocol, item, "ann", {"ok": True, "rating": 2, "issues": [(Option("blur", "Blur"), True, None)]})
    with pytest.raises(ValueError, match="annotator id"):
        make_label(protocol, item, "  ", {"ok": False})


def test_protocols_refuse_clashing_or_dangling_fields():
    with pytest.raises(ValueError, match="unique"):
        AnnotationProtocol("toy", (AnnotationField("id", "flag", "Id"),))
    with pytest.raises(ValueError, match="no flag"):
        AnnotationProtocol("toy", (AnnotationField("r", "rating", "R", only_if="missing"),))


def test_grid_clicks_toggle_one_based_cells_and_paint_them():
    assert grid_cell(0, 0, 512, 384, 16) == (1, 1) and grid_cell(511, 383, 512, 384, 16) == (16, 16)
    cells = toggle_cell([], (3, 5))
    cells = toggle_cell(cells, (1, 2))
    assert cells == [[1, 2], [3, 5]] and toggle_cell(cells, (3, 5)) == [[1, 2]]
    protocol, item = get_method("viescore2").annotation, Item("a.png", {"image": "a.png"})
    label = make_label(protocol, item, "ann", {"pq": 3, "sc": 9, "grid": [(3, 5), (1, 2)]})
    assert label["grid"] == [[1, 2], [3, 5]] and (label["pq"], label["sc"]) == (3, 9)
    with pytest.raises(ValueError, match="1..16"):
        make_label(protocol, item, "ann", {"pq": 3, "sc": 9, "grid": [(17, 1)]})
    image = Image.new("RGB", (100, 50), (0, 0, 255))
    painted = paint_grid(image, [[1, 1]], 4, side=200)
    assert painted.size == (200, 100)
    red, blue = painted.getpixel((25, 12)), painted.getpixel((75, 12))  # inside cell (1,1) and (1,2)
    assert red[0] > 100 and blue[0] < 60


def test_labels_load_as_a_dataset_and_terravis_reads_its_own(tmp_path):
    datasets = pytest.importorskip("datasets")
    from terravis.human import Annotation, score_annotation

    protocol = get_method("terravis").annotation
    violations = next(f for f in protocol.fields if f.name == "violations")
    store = LabelStore(tmp_path / "labels.jsonl", "terravis")
    item_a, item_b = Item("a.png", {"image": "a.png"}), Item("b.png", {"image": "b.png"})
    ticked = [(o, o.value == "support_stability", "major") for o in violations.options]
    store.add(make_label(protocol, item_a, "ann", {"eligible": True, "violations": ticked, "rating": 2}))
    store.add(make_label(protocol, item_b, "ann", {"eligible": False}))
    rows = datasets.load_dataset("json", data_files=str(store.path), split="train")
    assert rows.num_rows == 2 and rows["id"] == ["a.png", "b.png"] and rows["rating"] == [2, None]
    assert rows[0]["violations"] == [{"type": "support_stability", "severity": "major"}]
    (_, first), _ = iter_jsonl(store.path)
    record = score_annotation(Annotation(image_id=first["id"], eligible=first["eligible"],
                                         violations=first["violations"]))
    assert (record.n_major, record.n_minor) == (1, 0)


def test_the_cli_knows_the_command():
    from vlmjudge.cli import build_parser

    args = build_parser().parse_args(["annotate", "fager", "--images", "d", "--out", "o.jsonl", "--folders", "x", "y"])
    assert (args.method, args.images, args.out, args.folders) == ("fager", "d", "o.jsonl", ["x", "y"])


def test_the_cli_serves_the_method_app_on_the_given_address(tmp_path, monkeypatch):
    gr = pytest.importorskip("gradio")
    from vlmjudge.cli import build_parser

    for folder in ("A", "B"):
        save(tmp_path / folder / "p.png")
    launched = {}
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **kw: launched.update(kw, title=self.title))
    args = build_parser().parse_args(["annotate", "fager", "--images", str(tmp_path), "--out",
                                      str(tmp_path / "o.jsonl"), "--port", "7999"])
    assert args.func(args) == 0
    assert launched == {"server_name": "127.0.0.1", "server_port": 7999, "share": False, "title": "fager annotation",
                        "quiet": True, "prevent_thread_lock": True}  # quiet: no share=True hint from Gradio


@pytest.mark.parametrize("method, views, values", [
    ("terravis", {"image": "a.png"}, {"eligible": True, "violations": "support_stability", "rating": 2}),
    ("viescore2", {"image": "a.png"}, {"pq": 3, "sc": 9, "grid": [(3, 5)]}),
    ("fager", {"A": "A/p0.png", "B": "B/p0.png"}, {"choice": "B"}),
    ("regeneration", {"reference": "reference/p0.png", "generated": "generated/p0.png"}, {"rating": 4}),
])
def test_a_label_the_app_writes_is_read_by_the_methods_agreement_protocol(method, views, values):
    """The app's JSONL is the HUMAN input of `vlmjudge agreement`: the field names agree."""
    spec = get_method(method)
    item = Item(next(iter(views.values())), views)
    if method == "terravis":  # the checklist widget's value: (option, ticked, level) per option
        (field,) = [f for f in spec.annotation.fields if f.name == "violations"]
        values["violations"] = [(o, o.value == values["violations"], "major") for o in field.options]
    label = make_label(spec.annotation, item, "ann", values)
    value = spec.human.rate(label)
    assert value is not None and value == value  # a number, not None or NaN
    if method == "fager":
        from fager.human import pair_sources
        assert pair_sources({"id": label["id"], "labels": [label]}) == ("A/p0.png", "B/p0.png")
