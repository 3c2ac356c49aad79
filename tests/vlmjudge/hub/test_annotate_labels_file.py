"""Issue 50, item 3: the annotation app never corrupts its labels file nor labels an item twice. A file
without a final newline keeps its last line whole; a stale tab (or a second process) that submits an
item its annotator already labelled writes nothing, says so and moves on; an --out the app could
not append to is refused at start, the file left as it was."""
import json
import subprocess
import sys
import textwrap
import time

import pytest
from PIL import Image

from vlmjudge.annotation import Item, make_label
from vlmjudge.hub.annotate import annotation_app
from vlmjudge.hub.labels import AlreadyLabelled, AnnotationSetupError, LabelStore
from vlmjudge.outputs import iter_jsonl
from vlmjudge.registry import get_method
from vlmjudge.stats.human_sets.labels import label_rows

FAGER_LABEL = {"id": "A/p0.png", "annotator": "ann", "method": "fager", "choice": "A",
               "images": {"A": "A/p0.png", "B": "B/p0.png"}, "timestamp": "2026-05-01T10:00:00+00:00"}


def pairs(root, count=3):
    """`count` fager pairs under root/A and root/B."""
    for folder in ("A", "B"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        for k in range(count):
            Image.new("RGB", (24, 16), (60 * k, 90, 30)).save(root / folder / f"p{k}.png")
    return root


def fager_label(k, annotator="ann", choice="A"):
    """The label the app writes for pair k."""
    item = Item(f"A/p{k}.png", {"A": f"A/p{k}.png", "B": f"B/p{k}.png"})
    return make_label(get_method("fager").annotation, item, annotator, {"choice": choice})


def test_a_label_after_a_last_line_without_its_newline_starts_a_line_of_its_own(tmp_path):
    out = tmp_path / "labels.jsonl"
    first = json.dumps(FAGER_LABEL)
    out.write_text(first)  # as an editor or an interrupted tool may leave it
    store = LabelStore(out, "fager")
    assert store.labelled("ann") == {"A/p0.png"}
    store.add(fager_label(1))
    lines = out.read_text().split("\n")
    assert lines[0] == first and lines[2] == "" and len(lines) == 3
    assert [record["id"] for _, record in iter_jsonl(out)] == ["A/p0.png", "A/p1.png"]
    assert LabelStore(out, "fager").labelled("ann") == {"A/p0.png", "A/p1.png"}  # the next start reads it
    rows = label_rows([record for _, record in iter_jsonl(out)], get_method("fager").human)
    assert [row["id"] for row in rows] == ["A/p0.png", "A/p1.png"]  # and so does `vlmjudge agreement`


def test_the_store_refuses_an_item_its_annotator_labelled_already(tmp_path):
    store = LabelStore(tmp_path / "labels.jsonl", "fager")
    store.add(fager_label(0, choice="A"))
    with pytest.raises(AlreadyLabelled, match="'A/p0.png' is already labelled by 'ann'"):
        LabelStore(store.path, "fager").add(fager_label(0, choice="B"))  # a second store: another tab's view
    store.add(fager_label(0, annotator="bob", choice="B"))  # another annotator labels it too
    assert [(r["annotator"], r["choice"]) for _, r in iter_jsonl(store.path)] == [("ann", "A"), ("bob", "B")]
    with pytest.raises(ValueError, match="a terravis label, not fager"):
        store.add({**fager_label(1), "method": "terravis"})


def events(app):
    """The app's Start and Submit handlers, called as the page calls them."""
    return {fn.api_name: fn.fn for fn in app.fns.values() if fn.api_name in ("start", "submit")}


def test_two_tabs_of_one_annotator_label_each_item_once_first_answer_kept(tmp_path):
    out = tmp_path / "labels.jsonl"
    app = annotation_app("fager", pairs(tmp_path / "images"), out)
    handlers = events(app)
    one, two = handlers["start"]("ann")[0], handlers["start"]("ann")[0]  # both tabs open at item 1
    assert one["index"] == two["index"] == 0
    one = handlers["submit"](one, [], "A")[0]
    assert one["index"] == 1
    with pytest.warns(UserWarning, match="'A/p0.png' is already labelled by 'ann'.*not saved"):
        shown = handlers["submit"](two, [], "B")  # the stale tab answers item 1 again
    two, progress = shown[0], shown[1]
    assert two["index"] == 1 and "already labelled" in progress and "item 2 of 3" in progress
    two = handlers["submit"](two, [], "B")[0]  # the moved-on tab labels item 2 first this time
    with pytest.warns(UserWarning, match="'A/p1.png' is already labelled"):
        one = handlers["submit"](one, [], "A")[0]
    one = handlers["submit"](one, [], "A")[0]
    assert one["index"] == 3 and handlers["start"]("ann")[0]["index"] == 3  # all three labelled
    labels = [record for _, record in iter_jsonl(out)]
    assert [(r["id"], r["choice"]) for r in labels] == [("A/p0.png", "A"), ("A/p1.png", "B"), ("A/p2.png", "A")]


WRITER = textwrap.dedent('''
    import os, sys, time
    from vlmjudge.annotation import Item, make_label
    from vlmjudge.hub.labels import AlreadyLabelled, LabelStore
    from vlmjudge.registry import get_method

    out, go, name, count = sys.argv[1:]
    protocol = get_method("fager").annotation
    store = LabelStore(out, "fager")
    open(f"{go}.{name}", "w").close()  # imported and ready
    while not os.path.exists(go):  # every writer starts at once
        time.sleep(0.005)
    written = refused = 0
    for k in range(int(count)):
        item = Item(f"A/p{k}.png", {"A": f"A/p{k}.png", "B": f"B/p{k}.png"})
        try:
            store.add(make_label(protocol, item, "ann", {"choice": "A" if int(name) % 2 else "B"}))
            written += 1
        except AlreadyLabelled:
            refused += 1
    print(written, refused)
''')


def test_several_processes_on_one_file_never_write_one_label_twice(tmp_path):
    """Four `vlmjudge annotate` stand-ins race through the same items (without the file lock, most
    runs write some item twice)."""
    out, go, writers, count = tmp_path / "labels.jsonl", tmp_path / "go", 4, 60
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(out), str(go), str(k), str(count)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(writers)]
    deadline = time.monotonic() + 300
    while not all(go.with_name(f"go.{k}").exists() for k in range(writers)) and time.monotonic() < deadline:
        time.sleep(0.02)
    go.touch()
    counts = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-2000:]
        counts.append([int(n) for n in stdout.split()])
    ids = [record["id"] for _, record in iter_jsonl(out)]
    assert sorted(ids) == sorted(f"A/p{k}.png" for k in range(count))  # each item once, every line whole
    assert sum(c[0] for c in counts) == count and sum(c[1] for c in counts) == (writers - 1) * count


@pytest.mark.parametrize("case, content, message", [
    ("a folder", None, "is a folder"),
    ("a garbage line", json.dumps(FAGER_LABEL) + '\n{"id": "A/p1.png", "annot\n', "labels.jsonl:2: not valid JSON"),
    ("a scores file", '{"id": "a.png", "status": "scored", "score": 0.5}\n', "labels.jsonl:1: not a label of"),
    ("another method's labels", json.dumps({**FAGER_LABEL, "method": "terravis"}) + "\n",
     "labels.jsonl:1: a terravis label, not fager"),
    ("not text", b"\x89PNG\r\n\x1a\n\xff\xfe", "not UTF-8 text"),
    ("a path under a file", None, "is not a folder"),
])
def test_a_bad_out_is_refused_at_start_and_left_as_it_was(tmp_path, case, content, message):
    images = pairs(tmp_path / "images")
    out = tmp_path / "labels.jsonl"
    if case == "a folder":
        out.mkdir()
    elif case == "a path under a file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "labels.jsonl"
    elif isinstance(content, bytes):
        out.write_bytes(content)
    else:
        out.write_text(content)
    before = out.read_bytes() if out.is_file() else None
    with pytest.raises(AnnotationSetupError, match=message):
        annotation_app("fager", images, out)
    assert (out.read_bytes() if out.is_file() else None) == before


def test_a_file_broken_while_the_app_runs_is_said_on_the_page_not_appended_to(tmp_path):
    gr = pytest.importorskip("gradio")
    out = tmp_path / "labels.jsonl"
    handlers = events(annotation_app("fager", pairs(tmp_path / "images"), out))
    session = handlers["start"]("ann")[0]
    out.write_text("not json\n")  # someone writes into it meanwhile
    shown = handlers["submit"](session, [], "A")
    assert shown[2].startswith("Not saved: ") and "labels.jsonl:1: not valid JSON" in shown[2]  # the message line
    assert out.read_text() == "not json\n"


def test_a_labelling_space_that_cannot_start_says_why_in_one_line(tmp_path, monkeypatch):
    from vlmjudge.hub.annotate import annotation_space

    monkeypatch.setenv("VLMJUDGE_ANNOTATE_IMAGES", str(pairs(tmp_path / "images")))
    monkeypatch.setenv("VLMJUDGE_ANNOTATE_OUT", str(tmp_path / "images"))  # a folder
    with pytest.raises(SystemExit, match="^fager labelling Space cannot start: --out '.*images' is a folder"):
        annotation_space(str(tmp_path / "annotate.py"), "fager")
