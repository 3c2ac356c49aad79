"""The baselines package imports light (no torch) and follows the project's lazy-import scheme."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_importing_the_baselines_loads_no_torch():
    code = "import sys, t2ibaselines; print('torch' in sys.modules, t2ibaselines.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    loaded, version = out.stdout.split()
    assert loaded == "False" and version[0].isdigit()
