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


def test_info_lists_every_baseline_with_its_extra_and_whether_it_is_installed():
    from vlmjudge.cli.info import collect_info, method_text
    from vlmjudge.registry import MethodSpec, register, unregister

    spec = MethodSpec(name="needs_missing", inputs=("image",), build=dict, score_range=(0.0, 1.0), render=dict,
                      extra="iqa", requires=("json", "surely_not_installed_pkg"))
    register(spec)
    try:
        methods = collect_info()["methods"]
    finally:
        unregister("needs_missing")
    for name in ("vqascore", "tifa"):
        assert methods[name] == {"inputs": ["image", "prompt"], "score_range": [0.0, 1.0], "extra": None,
                                 "installed": True}
    assert methods["needs_missing"]["installed"] is False
    assert methods["needs_missing"]["missing"] == ["surely_not_installed_pkg"]
    assert method_text(methods["needs_missing"]).endswith(
        "extra: iqa; not installed (pip install vlmjudge[iqa]: missing surely_not_installed_pkg)")
    text = subprocess.run([sys.executable, "-m", "vlmjudge.cli", "info"], capture_output=True, text=True, cwd=REPO,
                          check=True).stdout
    assert "vqascore" in text and "tifa" in text and "extra: none (core); installed" in text
