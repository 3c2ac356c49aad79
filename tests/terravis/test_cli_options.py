"""`vlmjudge terravis score` options with a scripted judge (no model): T2I-model tags,
weights, the cache switch, chunking, and clear errors on unreadable images."""
import math

from PIL import Image

from tvf_replay import SCORE
from terravis import load_records
from vlmjudge.cli import main

BACKEND = "tvf_replay:StageReplay"


def folder(tmp_path, n=3):
    root = tmp_path / "imgs"
    root.mkdir()
    for i in range(n):
        Image.new("RGB", (8, 8), (60 * i, 0, 0)).save(root / f"{i}.png")
    (root / "notes.txt").write_text("not an image")
    return root


def test_tags_weights_and_chunks(tmp_path, capsys):
    root = folder(tmp_path)
    out = tmp_path / "r.jsonl"
    assert main(["terravis", "score", str(root), "--model", "m", "--backend", BACKEND, "--out", str(out),
                 "--t2i-model", "sdxl", "--lam", "2", "--alpha", "1", "--chunk-size", "2", "--quiet"]) == 0
    records, manifest = load_records(out)
    assert [r.id for r in records] == [f"{i}.png" for i in range(3)]  # notes.txt skipped
    assert all(r.meta["model"] == "sdxl" for r in records)
    assert all(r.score == math.exp(-2 * (1 + 1)) for r in records) and (manifest["lam"], manifest["alpha"]) == (2, 1)
    assert out.with_name("r.cache.sqlite").is_file()
    # 3 x (1 + 18 + 2 evidence + 2 severity) requests. The replay backend keys answers by (stage, check),
    # so within one judge call the chunk's two images ask each question once (the core judge computes
    # identical requests once): 23 calls for the first chunk; severity is asked from text alone, so the
    # second chunk's two severity questions are the first chunk's, answered from the cache: 21 more
    assert "model calls: 44 (answers from an earlier run: 0, reused within this run: 2)" in capsys.readouterr().out


def test_no_cache_and_explicit_cache(tmp_path, capsys):
    root = folder(tmp_path, 1)
    out = tmp_path / "r.jsonl"
    for _ in range(2):
        assert main(["terravis", "score", str(root / "0.png"), "--model", "m", "--backend", BACKEND,
                     "--out", str(out), "--no-cache", "--quiet"]) == 0
        assert "model calls: 23" in capsys.readouterr().out
    assert not out.with_name("r.cache.sqlite").exists()
    cache = tmp_path / "elsewhere.sqlite"
    for calls in (23, 0):
        assert main(["terravis", "score", str(root / "0.png"), "--model", "m", "--backend", BACKEND,
                     "--out", str(out), "--cache", str(cache), "--quiet"]) == 0
        assert f"model calls: {calls}" in capsys.readouterr().out
    (record,) = load_records(out)[0]
    assert record.score == SCORE


def test_unreadable_image_is_named_and_skipped(tmp_path, capsys):
    """Issue 19: a bad image is skipped and listed (exit 3); --on-error raise stops at it (exit 2)."""
    root = folder(tmp_path, 1)
    (root / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    out = tmp_path / "r.jsonl"
    argv = ["terravis", "score", str(root), "--model", "m", "--backend", BACKEND, "--out", str(out), "--quiet"]
    assert main(argv) == 3
    assert "broken.png: corrupt" in capsys.readouterr().err
    assert [r.id for r in load_records(out)[0]] == ["0.png"]
    out.unlink()
    assert main([*argv, "--on-error", "raise"]) == 2
    assert "broken.png" in capsys.readouterr().err
    assert not out.exists()
