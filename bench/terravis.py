"""`python -m bench.terravis`: the TerraVis benchmarks, by their arguments.

    python -m bench.terravis --images 16 --size 1024 --model tiny          the paths (bench.terravis_paths)
    python -m bench.terravis --backends transformers,vllm,vllm-serve ...   the backends (bench.side_by_side)

Why one entry for two benchmarks: both time TerraVis, and the issues that set their targets name
this command. A thin dispatcher, so that neither benchmark imports the other.
"""
from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """The backends side by side when `--backends` is given, else the paths."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(arg == "--backends" or arg.startswith("--backends=") for arg in argv):
        from . import side_by_side
        return side_by_side.main(argv, prog="python -m bench.terravis")
    from . import terravis_paths
    return terravis_paths.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
