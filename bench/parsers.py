"""Parser scaling: every answer reader on degenerate text at n and 8n characters, side by side.

    python -m bench.parsers [--size 125000]

A model can answer anything, and a cached answer is read again on every rerun, so each reader must
take time linear in its input. For each reader and each repeated fragment (the shapes that make
backtracking regexes or recursive descent blow up), the input is timed at `--size` characters and
at 8x that; a linear reader's time grows about 8x, a quadratic one's about 64x. Any outcome
(a value, or the reader's documented parse failure) is fine here: the tests check which. The last
line is `worst growth: <largest 8x-input time ratio>`.
"""
from __future__ import annotations

import argparse
import time
from typing import Callable, Sequence

#: Fragments repeated to make degenerate answers.
FRAGMENTS = ("*", " ", "{", "[", '"', "\\", "9", "`", "r1: ", "1,", "Answer: ", "{\"a\": ", "**yes")
GROWTH = 8


def readers() -> dict[str, Callable[[str], object]]:
    """Every method's answer readers, each wrapped to swallow its own documented failure type."""
    from fager.parsing import AnswerParseError, parse_answer
    from regeneration.parsing import JSONReadError, extract_json
    from terravis.answers import read_detection, read_severity
    from terravis.parsing import first_json_object, parse_evidence
    from viescore2.parsing import parse_output

    def tolerant(read: Callable[[str], object], *failures: type[BaseException]) -> Callable[[str], object]:
        def run(text: str) -> object:
            try:
                return read(text)
            except failures:
                return None
        return run

    return {
        "terravis.parse_evidence": parse_evidence,
        "terravis.first_json_object": first_json_object,
        "terravis.read_detection": read_detection,
        "terravis.read_severity": read_severity,
        "viescore2.parse_output": parse_output,
        "fager.parse_answer": tolerant(parse_answer, AnswerParseError),
        "regeneration.extract_json": tolerant(extract_json, JSONReadError),
    }


#: Below this the 8x input's time is noise, not growth: the reader is shown as fast ("-").
NOISE_FLOOR_S = 0.02


def seconds(read: Callable[[str], object], text: str, repeats: int = 3) -> float:
    """The best of a few runs: the machine may be shared, and the minimum is the least disturbed."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        read(text)
        best = min(best, time.perf_counter() - started)
    return best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.parsers", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=125_000, help="characters of the smaller input")
    args = parser.parse_args(argv)
    worst = (0.0, "")
    print(f"{'reader':<28}{'fragment':>12}{'small s':>10}{'8x s':>10}{'growth':>9}")
    for name, read in readers().items():
        for fragment in FRAGMENTS:
            small = fragment * max(1, args.size // len(fragment))
            large = fragment * max(1, GROWTH * args.size // len(fragment))
            t_small = max(seconds(read, small), 1e-6)
            t_large = seconds(read, large)
            growth = t_large / t_small if t_large >= NOISE_FLOOR_S else None
            if growth is not None:
                worst = max(worst, (growth, f"{name} on {fragment!r}"))
            shown = f"{growth:.1f}" if growth is not None else "-"
            print(f"{name:<28}{fragment!r:>12}{t_small:>10.4f}{t_large:>10.4f}{shown:>9}")
    print(f"worst case: {worst[1]} (linear ~{GROWTH}, quadratic ~{GROWTH ** 2})")
    print(f"worst growth: {worst[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
