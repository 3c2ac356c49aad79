"""`Dataset.map(num_proc=2)` through the datasets integration after the parent ran a torch op:
the forked workers' torch ops would wait forever on the parent's OpenMP pool; the map finishes,
in a child process under a hard timeout, with the scores an in-process map gives."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("datasets")
pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
LEVELS = [0, 40, 80, 120, 160, 200]

SCRIPT = f"""
import json, torch, datasets
from PIL import Image
from integ_toys import TORCH_BRIGHT
from vlmjudge.registry import register
from vlmjudge.integrations.datasets import add_judge_columns

register(TORCH_BRIGHT)
threads = torch.get_num_threads()
a = torch.randn(512, 512)
float((a @ a).sum())  # the parent's OpenMP pool now has threads a fork does not copy
ds = datasets.Dataset.from_dict({{"image": [Image.new("RGB", (16, 16), (v, v, v)) for v in {LEVELS}]}})
out = add_judge_columns(ds, ["integ_torch_bright"], batch_size=2, map_options={{"num_proc": 2}})
print(json.dumps({{"scores": out["integ_torch_bright_score"][:], "threads": [threads, torch.get_num_threads()]}}))
"""


def run_bounded(timeout_s: float):
    """Run SCRIPT in its own process group; a run past the timeout kills the group (workers too)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    # two OpenMP threads: the suite's conftest pins one, under which no op is parallel and nothing hangs
    env.update(PYTHONPATH=os.pathsep.join([str(REPO), str(HERE)]), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               OMP_NUM_THREADS="2")
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"Dataset.map(num_proc=2) after a torch op in the parent ran past {timeout_s} s (hung)")
    return proc.returncode, out, err


def test_forked_workers_after_a_parent_torch_op_finish_with_the_right_scores():
    code, out, err = run_bounded(120)
    assert code == 0, err[-2000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert result["scores"] == pytest.approx([float(np.full((16, 16), v).mean()) for v in LEVELS])
    before, after = result["threads"]
    assert before == 2, "the parent ran no parallel op: the test would prove nothing"
    assert after == before  # the parent keeps its threads; only the forked workers run on one
