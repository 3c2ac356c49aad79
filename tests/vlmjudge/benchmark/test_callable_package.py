"""`vlmjudge.benchmark` is both the package and the function: `import vlmjudge` stays light, the
package is callable with the function's keywords, and its sub-packages are still reached."""
import subprocess
import sys

import pytest

import vlmjudge
from vlmjudge.benchmark import BenchmarkError


def test_import_vlmjudge_and_the_benchmark_name_stay_light():
    code = ("import sys, vlmjudge; b = vlmjudge.benchmark; import vlmjudge.benchmark.suites; "
            "print(callable(b), b is vlmjudge.benchmark, hasattr(vlmjudge.benchmark, 'suites'), "
            "'torch' in sys.modules, 'benchmark' in vlmjudge.__all__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "True", "False", "True"]


def test_calling_the_package_runs_the_benchmark_with_its_keywords(tmp_path):
    with pytest.raises(BenchmarkError, match="give the prompts"):
        vlmjudge.benchmark(out=tmp_path, methods="terravis")
    with pytest.raises(TypeError):
        vlmjudge.benchmark(tmp_path)  # keywords only, as the function takes them
