"""What a command-line run takes in, what it could not take, and how it exits.

One bad-input policy for every method's CLI and the distributed runner: with `on_error="skip"` (the
CLI default) an unreadable or unprocessable image is skipped, counted, reported one per line as
`path: reason`, and written to a failures file beside the output, while the rest are scored; with
`on_error="raise"` (the Python API default) the first one stops the run with its index and path.
Images are checked here, before any model loads, so a bad folder fails fast.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Iterable, Sequence

from .images import ImageInputError, resolution_note, to_pil

#: The image files a folder input contributes, everywhere (CLIs, distributed runner, reports).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
ON_ERROR_CHOICES = ("skip", "raise")

#: Exit statuses of the judging commands (also in each command's --help).
EXIT_OK = 0           # every item has a result (an N/A image and a counted parse failure are results)
EXIT_USAGE = 2        # bad arguments, a bad --model, an unreadable cache file
EXIT_SOME_FAILED = 3  # some items were skipped as bad input or failed to run; the rest have results
EXIT_NONE_SCORED = 4  # no item got a result
EXIT_INTERRUPTED = 130
EXIT_HELP = ("exit status: 0 every item has a result (N/A images and counted parse failures are results); "
             "3 some items were skipped as bad input or failed to run (listed, and written to "
             "<out>.failures.jsonl); 4 no item got a result; 2 a usage error (arguments, --model, cache "
             "file); 130 interrupted (a rerun resumes from the cache)")


class CommandError(SystemExit):
    """A usage problem a person fixes (a bad --model, a missing file): one line, exit status 2.

    A SystemExit, so a method's own entry point that does not catch it still prints one line.

    Examples:
        >>> str(CommandError("no such model folder: ./models/qwen"))
        'no such model folder: ./models/qwen'
        >>> CommandError("bad --model").code
        'vlmjudge: error: bad --model'
    """

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(f"vlmjudge: error: {message}")

    def __str__(self) -> str:
        return self.message


class RunProgress:
    """What an interrupted run had finished, for the one line Ctrl-C or SIGTERM prints."""

    def __init__(self) -> None:
        self.saved = 0
        self.out: str | None = None


#: Updated by the judging commands as records are written.
RUN = RunProgress()


def run_command(run, prog: str, resume_hint: str = "a rerun resumes from the response cache") -> int:
    """Run a command's body: Ctrl-C and SIGTERM become one line with what was saved (status 130), a
    usage problem or an unreadable cache file one line with status 2.

    Examples:
        A usage problem in the body is one line on stderr and exit status 2:

        >>> def body():
        ...     raise CommandError("--out must name a file")
        >>> run_command(body, "vlmjudge demo")
        2
        >>> run_command(lambda: 0, "vlmjudge demo")
        0
    """
    import signal
    import threading

    from .cache import CacheFileError

    def terminate(signum, frame) -> None:
        raise KeyboardInterrupt

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminate) if in_main else None
    try:
        return int(run() or 0)
    except KeyboardInterrupt:
        where = f" ({RUN.out})" if RUN.out else ""
        print(f"interrupted: {RUN.saved} result(s) finished and saved{where}; {resume_hint}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (CommandError, CacheFileError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def is_image_file(path: str | os.PathLike) -> bool:
    """Whether a path names a file with one of `IMAGE_SUFFIXES` (any case).

    Examples:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> for name in ("cat.PNG", "notes.txt"):
        ...     _ = open(os.path.join(folder, name), "wb").write(b"")
        >>> is_image_file(os.path.join(folder, "cat.PNG")), is_image_file(os.path.join(folder, "notes.txt"))
        (True, False)
    """
    return Path(path).suffix.lower() in IMAGE_SUFFIXES and Path(path).is_file()


def image_items(inputs: Sequence[str | os.PathLike]) -> list[tuple[str, Path]]:
    """(image id, path) for image files and folders (searched recursively, sorted within each).

    The id is the image's path relative to the input root, with '/' separators and its suffix:
    the root is the folder given, or with several inputs the deepest folder holding them all, so
    `a/cat.png` and `b/cat.png` never share an id. A folder without images, a missing path or an
    image given twice is a ValueError.

    Examples:
        >>> import tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> for name in ("a/cat.png", "b/cat.png", "b/notes.txt"):
        ...     (root / name).parent.mkdir(exist_ok=True); _ = (root / name).write_bytes(b"")
        >>> [item for item, _ in image_items([root])]
        ['a/cat.png', 'b/cat.png']
        >>> [item for item, _ in image_items([root / "a", root / "b"])]
        ['a/cat.png', 'b/cat.png']
    """
    if not inputs:
        raise ValueError("no image files or folders given")
    found: list[Path] = []
    for raw in inputs:
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if is_image_file(p))
            if not files:
                raise ValueError(f"no images under {raw} (no image files ending {', '.join(IMAGE_SUFFIXES)})")
            found += files
        elif path.is_file():
            found.append(path)
        else:
            raise ValueError(f"no such image file or folder: {raw}")
    roots = [Path(raw) if Path(raw).is_dir() else Path(raw).parent for raw in inputs]
    root = roots[0] if len(roots) == 1 else Path(os.path.commonpath([os.path.abspath(r) for r in roots]))
    base = os.path.abspath(root)
    items = [(Path(os.path.relpath(os.path.abspath(p), base)).as_posix(), p) for p in found]
    seen: set[str] = set()
    repeated = [item for item, _ in items if item in seen or seen.add(item)]
    if repeated:
        raise ValueError(f"images given more than once: {repeated[:5]}")
    return items


def looks_like_path(model: str) -> bool:
    """A --model that is meant as a folder: never tried on the Hub (a typo there costs minutes).

    Examples:
        >>> [looks_like_path(m) for m in ("Qwen/Qwen3-VL-8B-Instruct", "./checkpoints/qwen", "models/")]
        [False, True, True]
    """
    return (model.startswith(("/", "./", "../", "~")) or model.endswith("/") or model.count("/") > 1
            or os.path.isabs(model))


@dataclass(frozen=True)
class Failure:
    """One item that got no result: its position in the user's input, its path or id, and why.

    Examples:
        >>> Failure(3, "images/cat.png", "cannot identify image file").line()
        'images/cat.png: cannot identify image file'
    """
    index: int
    item: str
    reason: str

    def line(self) -> str:
        return f"{self.item}: {self.reason}"


@dataclass
class CheckedImage:
    """An image that passed the checks, with its position in the input and any resolution flag."""
    index: int
    item: str
    image: object
    note: str | None


def check_images(items: Sequence[tuple[str, str | os.PathLike]], on_error: str = "skip"
                 ) -> tuple[list[CheckedImage], list[Failure]]:
    """Decode and size-check every (id, path) before a model loads; bad ones skipped or raised.

    Examples:
        A file that is not an image is skipped and counted; the good one is kept with its position:

        >>> import os, tempfile
        >>> from PIL import Image
        >>> folder = tempfile.mkdtemp()
        >>> Image.new("RGB", (128, 128)).save(os.path.join(folder, "good.png"))
        >>> _ = open(os.path.join(folder, "bad.png"), "wb").write(b"not a png")
        >>> good, bad = check_images([("bad.png", os.path.join(folder, "bad.png")),
        ...                           ("good.png", os.path.join(folder, "good.png"))])
        >>> [(c.index, c.item, c.note) for c in good], [f.index for f in bad]
        ([(1, 'good.png', None)], [0])
    """
    if on_error not in ON_ERROR_CHOICES:
        raise ValueError(f"on_error must be one of {ON_ERROR_CHOICES}, got {on_error!r}")
    good, bad = [], []
    for index, (item_id, path) in enumerate(items):
        try:
            image = to_pil(path, index=index)
        except ImageInputError as error:
            if on_error == "raise":
                raise ImageInputError(f"{path}: {error.reason}", index) from error
            bad.append(Failure(index, str(path), error.reason))
            continue
        good.append(CheckedImage(index, str(item_id), image, resolution_note(image)))
    return good, bad


def failures_path(out: str | os.PathLike) -> Path:
    """Where a run's failures go: `<out>.failures.jsonl`, beside its records.

    Examples:
        >>> failures_path("runs/scores.jsonl").as_posix()
        'runs/scores.jsonl.failures.jsonl'
    """
    out = Path(out)
    return out.with_name(out.name + ".failures.jsonl")


def report_failures(failures: Iterable[Failure], out: str | os.PathLike | None,
                    stream: IO[str] | None = None) -> Path | None:
    """Print `path: reason` per failure and write them beside the output; returns the file, if any."""
    failures = list(failures)
    stream = stream or sys.stderr
    target = failures_path(out) if out else None
    if target is not None and target.exists() and not failures:
        target.unlink()  # a clean rerun leaves no stale list behind
    if not failures:
        return None
    print(f"skipped {len(failures)} item(s):", file=stream)
    for failure in failures:
        print(f"  {failure.line()}", file=stream)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            for failure in failures:
                handle.write(json.dumps(asdict(failure), ensure_ascii=False) + "\n")
        print(f"wrote {target}", file=stream)
    return target


def exit_status(n_items: int, n_results: int) -> int:
    """0 when every item has a result, 4 when none has, 3 in between.

    Examples:
        >>> exit_status(10, 10), exit_status(10, 7), exit_status(10, 0)
        (0, 3, 4)
    """
    if n_results >= n_items:
        return EXIT_OK
    return EXIT_NONE_SCORED if n_results == 0 else EXIT_SOME_FAILED
