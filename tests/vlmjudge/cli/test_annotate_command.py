"""Issue 50, items 3 and 6: whatever keeps `vlmjudge annotate` from serving is one line on stderr and
exit status 2, found before anything is served: an unknown method, a missing or empty --images,
missing pair folders, a bad --items CSV, a bad --port or --host, a port in use, and an --out the
app could not append to (left as it was)."""
from __future__ import annotations

import contextlib
import io
import json
import socket

import pytest
from PIL import Image

from vlmjudge.cli import main as vlmjudge_main
from vlmjudge.cli.exits import EXIT_USAGE


def run_annotate(argv: list[str]) -> tuple[int, str]:
    """`vlmjudge annotate ...` in process: (exit status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = vlmjudge_main(["annotate", *argv])
    return code, err.getvalue()


@pytest.fixture
def no_serving(monkeypatch):
    """Fail the test if the app would be served: every case below must stop before."""
    gr = pytest.importorskip("gradio")

    def launch(self, **kwargs):
        raise AssertionError("the app was served despite a bad argument")
    monkeypatch.setattr(gr.Blocks, "launch", launch)


def pairs(root, names=("p0", "p1"), folders=("A", "B")):
    """fager pairs: one image per name in each folder."""
    for folder in folders:
        (root / folder).mkdir(parents=True, exist_ok=True)
        for k, name in enumerate(names):
            Image.new("RGB", (24, 16), (50 * k, 120, 30)).save(root / folder / f"{name}.png")
    return root


def assert_one_line(code: int, err: str, *words: str) -> None:
    """Exit 2, one line on stderr, holding each word, no traceback."""
    lines = err.strip().splitlines()
    assert code == EXIT_USAGE, err
    assert len(lines) == 1 and lines[0].startswith("vlmjudge: error: "), err
    assert "Traceback" not in err and all(word in err for word in words), err


#: A bad --items case: (the CSV's content, None for no file; words its error line holds).
ITEMS_CASES = {
    "items missing": (None, ["is missing"]),
    "items a folder": (None, ["is a folder"]),
    "items no column": ("A,prompt\nA/p0.png,x\n", ["missing ['B']"]),
    "items empty": ("A,B,prompt\n", ["lists no items"]),
    "items absolute path": ("A,B\nABSOLUTE,B/p0.png\n", ["items.csv:2 (A)", "x.png' is not a path under"]),
    "items go up": ("A,B\nA/p1.png,../images/B/p1.png\n", ["items.csv:2 (B)", "'../images/B/p1.png' is not a path"]),
    "items twice": ("A,B\nA/p0.png,B/p0.png\nA/p1.png,B/p1.png\nA/p0.png,B/p1.png\n",
                    ["items.csv:4 lists 'A/p0.png' again (first at line 2)"]),
    "items empty cell": ("A,B\nA/p0.png,\n", ["items.csv:2 (B)"]),
    "items no image": ("A,B\nA/p0.png,B/p7.png\n", ["items.csv:2 names images not under", "B/p7.png"]),
    "items not text": (b"A,B\n\xff\xfe\n", ["cannot read --items"]),
}


def case_args(tmp_path, case):
    """The arguments of one bad case, with a good --out unless the case is about --out."""
    images, out = tmp_path / "images", str(tmp_path / "labels.jsonl")
    if case == "unknown method":
        return ["nosuchmethod", "--images", str(pairs(images)), "--out", out], ["no method 'nosuchmethod'"]
    if case == "missing images":
        return ["terravis", "--images", str(images), "--out", out], ["is missing"]
    if case == "images is a file":
        (tmp_path / "x.png").write_text("x")
        return ["terravis", "--images", str(tmp_path / "x.png"), "--out", out], ["is a file"]
    if case == "empty images":
        images.mkdir()
        (images / "notes.txt").write_text("no pictures here")
        return ["terravis", "--images", str(images), "--out", out], ["no images"]
    if case == "missing pair folders":
        images.mkdir()
        return ["fager", "--images", str(images), "--out", out], ["no folder 'A'"]
    if case == "a lonely image":
        pairs(images)
        Image.new("RGB", (8, 8)).save(images / "A" / "p9.png")
        return ["fager", "--images", str(images), "--out", out], ["without a partner", "p9"]
    if case == "one stem twice":
        pairs(images)
        Image.new("RGB", (8, 8)).save(images / "A" / "p0.jpg")
        return ["fager", "--images", str(images), "--out", out], ["two images of one stem", "p0.jpg"]
    if case == "folders leave images":
        pairs(images)
        return ["fager", "--images", str(images), "--out", out, "--folders", "A", "../images/B"], ["not a path under"]
    if case == "a text file named png":
        pairs(images)
        (images / "B" / "p1.png").write_text("not an image")
        return ["fager", "--images", str(images), "--out", out], ["cannot show 'B/p1.png'"]
    if case in ITEMS_CASES:
        pairs(images)
        table, (content, words) = tmp_path / "items.csv", ITEMS_CASES[case]
        content = content.replace("ABSOLUTE", str(tmp_path / "x.png")) if isinstance(content, str) else content
        if case == "items a folder":
            table.mkdir()
        elif isinstance(content, bytes):
            table.write_bytes(content)
        elif content is not None:
            table.write_text(content)
        return ["fager", "--images", str(images), "--out", out, "--items", str(table)], words
    raise ValueError(case)


@pytest.mark.parametrize("case", [
    "unknown method", "missing images", "images is a file", "empty images", "missing pair folders",
    "a lonely image", "one stem twice", "folders leave images", "a text file named png", *ITEMS_CASES])
def test_a_bad_input_is_one_line_and_exit_2(tmp_path, no_serving, case):
    argv, words = case_args(tmp_path, case)
    assert_one_line(*run_annotate(argv), *words)
    assert not (tmp_path / "labels.jsonl").exists()  # nothing written, not even an empty file


@pytest.mark.parametrize("port", ["99999", "0", "-1", "http", "80.5"])
def test_a_port_outside_1_to_65535_is_one_line(tmp_path, no_serving, port):
    argv = ["fager", "--images", str(pairs(tmp_path)), "--out", str(tmp_path / "l.jsonl"), "--port", port]
    assert_one_line(*run_annotate(argv), "--port must be a whole number in 1..65535", repr(port))


def test_an_empty_host_is_one_line(tmp_path, no_serving):
    argv = ["fager", "--images", str(pairs(tmp_path)), "--out", str(tmp_path / "l.jsonl"), "--host", " "]
    assert_one_line(*run_annotate(argv), "--host must name an address")


@pytest.mark.parametrize("case", ["a folder", "a garbage line", "a path under a file", "another method's labels"])
def test_a_bad_out_is_one_line_at_start_and_left_as_it_was(tmp_path, no_serving, case):
    images, out = pairs(tmp_path / "images"), tmp_path / "labels.jsonl"
    if case == "a folder":
        out.mkdir()
    elif case == "a path under a file":
        (tmp_path / "file").write_text("keep me")
        out = tmp_path / "file" / "labels.jsonl"
    elif case == "a garbage line":
        out.write_text('{"id": "A/p0.png", "annotator": "a", "method": "fager", "choice": "A"}\nGARBAGE\n')
    else:
        out.write_text(json.dumps({"id": "x.png", "annotator": "a", "method": "terravis"}) + "\n")
    before = out.read_bytes() if out.is_file() else None
    words = {"a folder": "is a folder", "a garbage line": "labels.jsonl:2: not valid JSON",
             "a path under a file": "is not a folder", "another method's labels": "a terravis label, not fager"}
    assert_one_line(*run_annotate(["fager", "--images", str(images), "--out", str(out)]), words[case])
    assert (out.read_bytes() if out.is_file() else None) == before
    if case == "a path under a file":
        assert (tmp_path / "file").read_text() == "keep me"


def test_a_port_in_use_is_one_line(tmp_path):
    pytest.importorskip("gradio")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["fager", "--images", str(pairs(tmp_path)), "--out", str(tmp_path / "l.jsonl"), "--port", str(port)]
        assert_one_line(*run_annotate(argv), f"cannot serve on 127.0.0.1:{port}")


def test_serving_says_where_in_one_line_without_gradio_s_share_hint(tmp_path, monkeypatch, capsys):
    """Gradio's start lines end with "To create a public link, set `share=True`", a link this
    command never opens: it serves quietly and prints its own line, the address and the labels file."""
    gr = pytest.importorskip("gradio")
    from browser import free_port

    monkeypatch.setattr(gr.Blocks, "block_thread", lambda self: self.close())  # served, then stopped
    port = free_port()
    out = tmp_path / "l.jsonl"
    code = vlmjudge_main(["annotate", "fager", "--images", str(pairs(tmp_path / "images")), "--out", str(out),
                          "--port", str(port)])
    printed = capsys.readouterr()
    assert code == 0 and "share" not in printed.out + printed.err, printed
    lines = [line for line in printed.out.splitlines() if not line.startswith("Closing server")]  # the stop
    assert lines == [f"labelling fager at http://127.0.0.1:{port}/ until Ctrl-C; labels go to {out}"]
