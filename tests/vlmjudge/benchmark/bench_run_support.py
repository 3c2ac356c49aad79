"""Shared pieces of the benchmark runner's tests, importable by name (spawned processes and Ray
actors import them too): the fixture's ids, a prompts file, a judged toy method, the stand-ins
for the leaderboard writers, and the worker every rank of a two-process benchmark runs."""
from __future__ import annotations

import dataclasses
import json
import sys
import types
from pathlib import Path

from toy_method import SPEC as TOY_SPEC

#: The acceptance fixture's prompt ids and models.
PROMPT_IDS = [f"p{n:02d}" for n in range(12)]
MODELS = ("alpha", "beta", "gamma")
#: The toy method (P(Yes) to "Is this a photo?") with a default model, so a benchmark gives it the
#: judge (a method without one gets none); `bench_run_support:JUDGED` in --methods.
JUDGED = dataclasses.replace(TOY_SPEC, name="toyjudged", default_model="toy/any-judge")


def write_prompts(path: Path, ids=PROMPT_IDS) -> Path:
    """A prompts CSV with ids, prompts (`a photo of thing number N`) and two categories."""
    rows = "".join(f"{pid},a photo of thing number {n},{'animals' if n % 2 else 'objects'}\n"
                   for n, pid in enumerate(ids))
    path.write_text("id,prompt,category\n" + rows)
    return path


def install_board_stand_ins(monkeypatch) -> dict[str, list]:
    """Stand-ins for `vlmjudge.benchmark.leaderboard` and `.report` with the agreed signatures
    (another module provides them): each call is recorded and writes a small file."""
    calls: dict[str, list] = {"build": [], "write": [], "report": []}
    board = types.ModuleType("vlmjudge.benchmark.leaderboard")
    report = types.ModuleType("vlmjudge.benchmark.report")

    def build_leaderboard(runs, suite, *, n_resamples=2000, seed=0, confidence=0.95, human=None):
        calls["build"].append({"runs": runs, "suite": suite, "n_resamples": n_resamples, "seed": seed,
                               "confidence": confidence, "human": human})
        return {"rows": [], "stand_in": True}

    def write_leaderboard(board_value, out_dir):
        calls["write"].append(out_dir)
        (Path(out_dir) / "leaderboard.json").write_text(json.dumps(board_value))

    def write_benchmark_report(board_value, runs, suite, out_dir, *, dpi=150):
        calls["report"].append({"runs": runs, "dpi": dpi})
        page = Path(out_dir) / "report.html"
        page.write_text("<html></html>")
        return [page]

    board.build_leaderboard, board.write_leaderboard = build_leaderboard, write_leaderboard
    report.write_benchmark_report = write_benchmark_report
    monkeypatch.setitem(sys.modules, board.__name__, board)
    monkeypatch.setitem(sys.modules, report.__name__, report)
    return calls


class _Setter:
    """The one MonkeyPatch method the stand-ins use, for a spawned process that keeps them for life."""

    @staticmethod
    def setitem(mapping, key, value):
        mapping[key] = value


def group_worker(rank: int, world_size: int, args: dict) -> dict:
    """One rank of a benchmark under torchrun's environment: every rank runs the same call, process 0
    writes; returns the rank's status and manifest ({} off process 0)."""
    import os

    import vlmjudge

    os.environ["HF_HOME"] = args["hf_home"][rank]
    install_board_stand_ins(_Setter())
    result = vlmjudge.benchmark(**args["benchmark"])
    return {"rank": rank, "status": result.status, "manifest": result.manifest}
