"""Issue 52, item 6: a score command's bar moves as the judge answers each batch, not once per
16-image chunk (a first run of two images sat at 0/2 until it ended), and says which judge loads
("loading judge MODEL ...") on standard error unless --quiet."""
from __future__ import annotations

import contextlib
import io

import pytest
from PIL import Image

from vlmjudge.backends.replay import ReplayJudge
from vlmjudge.cli import main as vlmjudge_main
from vlmjudge.cli import progress
from vlmjudge.cli.progress import ItemProgress
from vlmjudge.requests import Request


class RecordingBar:
    """A bar that keeps the position after each update (a real one draws nothing off a terminal)."""

    def __init__(self, total: int) -> None:
        self.total, self.n, self.positions, self.closed = total, 0, [], False

    def update(self, n: int) -> None:
        self.n += n
        self.positions.append(self.n)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def bars(monkeypatch):
    """Every bar a command opens, recorded."""
    made: list[RecordingBar] = []

    def bar(total, desc, args=None, unit="item"):
        made.append(RecordingBar(total))
        return made[-1]
    monkeypatch.setattr(progress, "progress_bar", bar)
    return made


def asks(n: int, tag: str) -> list[Request]:
    return [Request(text="?", meta={"id": f"{tag}{k}"}) for k in range(n)]


def replay(batch_size: int = 2) -> ReplayJudge:
    return ReplayJudge({f"{tag}{k}": "Yes" for tag in "ab" for k in range(8)}, key_fields=["id"],
                       batch_size=batch_size)


def test_the_bar_moves_per_batch_and_reaches_a_chunk_s_end_only_with_its_records(bars):
    judge = replay()
    with ItemProgress(8, "test", judges=[judge]) as bar:
        bar.start(4)
        judge.generate(asks(8, "a"))  # 4 batches of 2, the chunk's records not yet written
        first = list(bars[0].positions)
        bar.advance(4)
        bar.start(4)
        judge.generate(asks(8, "b"))  # the first chunk taught 2 requests per item: one item a batch
        second = list(bars[0].positions)
        bar.advance(4)
    assert first == [1, 2] and max(first) < 4  # moved inside the chunk, below its end
    assert second == [1, 2, 4, 5, 6, 7] and bars[0].positions[-1] == 8
    assert bars[0].closed and judge.on_batch is None  # the judge no longer reports to a closed bar


def test_answers_from_the_cache_move_the_bar_when_the_records_are_written(bars, tmp_path):
    cache = str(tmp_path / "answers.sqlite")
    first = ReplayJudge({f"a{k}": "Yes" for k in range(4)}, key_fields=["id"], cache=cache, batch_size=2)
    first.generate(asks(4, "a"))
    rerun = ReplayJudge({}, key_fields=["id"], cache=cache, batch_size=2)
    with ItemProgress(2, "test", judges=[rerun]) as bar:
        bar.start(2)
        rerun.generate(asks(4, "a"))  # no model call: no batch
        assert bars[0].positions == []
        bar.advance(2)
    assert bars[0].positions == [2]


def make_images(folder, n=2):
    folder.mkdir()
    for k in range(n):
        Image.new("RGB", (48, 40), (70 * k, 120, 200 - 60 * k)).save(folder / f"{k}.png")
    return folder


def score(argv):
    """`vlmjudge ...` in process: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = vlmjudge_main(argv)
    return code, out.getvalue(), err.getvalue()


def test_terravis_score_moves_its_bar_within_one_chunk_and_says_it_loads_the_judge(tmp_path, bars, tiny_vlm_path):
    model = tiny_vlm_path()
    argv = ["terravis", "score", str(make_images(tmp_path / "imgs")), "--model", model, "--device", "cpu",
            "--batch-size", "4", "--out", str(tmp_path / "run" / "records.jsonl")]
    code, _, err = score(argv)
    assert code == 0, err
    (bar,) = bars
    assert bar.total == 2 and bar.positions == [1, 2]  # two images, one chunk: the bar stopped at 1 first
    assert err.splitlines()[0] == f"loading judge {model} (transformers, cpu) ..."
    code, _, err = score([*argv, "--quiet"])  # a rerun: answers from the cache
    assert code == 0 and "loading judge" not in err, err


def test_regeneration_compare_says_it_loads_its_judge(tmp_path, tiny_vlm_path, tiny_encoder_dirs):
    """The shared judge flags print the line for every command that loads a judge through them."""
    clip, dino = tiny_encoder_dirs["clip"], tiny_encoder_dirs["dino"]
    for folder in ("refs", "gens"):
        make_images(tmp_path / folder, 1)
    model = tiny_vlm_path()
    argv = ["regeneration", "compare", str(tmp_path / "refs"), str(tmp_path / "gens"), "--clip-model", clip,
            "--dino-model", dino, "--model", model, "--device", "cpu", "--out", str(tmp_path / "pairs.jsonl")]
    code, _, err = score(argv)
    assert code == 0, err
    assert f"loading judge {model} (transformers, cpu) ..." in err.splitlines()
