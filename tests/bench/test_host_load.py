"""The host's load around a run: load averages before and after, the CPU others used meanwhile
(a busy process outside this process tree counts), and when a figure counts as taken on a
loaded host."""
import shlex
import subprocess
import sys
import time

import pytest

from bench.host_load import HostLoad, LoadWatch


def test_a_run_s_load_is_read_around_it():
    with LoadWatch() as watch:
        end = time.monotonic() + 0.6
        while time.monotonic() < end:  # busy here: ours, not others'
            pass
    load = watch.load
    assert load.cores >= 1 and all(v >= 0 for v in load.before + load.after)
    assert load.others_cores is not None and 0 <= load.others_cores <= load.cores


def test_a_busy_process_outside_the_tree_is_counted(tmp_path):
    """A busy process started outside this tree (its own session, via a shell that exits) is another's."""
    flag = tmp_path / "stop"
    spin = f"import os, time\nwhile not os.path.exists({str(flag)!r}): pass"
    # double fork: the spinner's parent exits at once, so the spinner is reparented away from us
    subprocess.run(["sh", "-c", f"{shlex.quote(sys.executable)} -c {shlex.quote(spin)} >/dev/null 2>&1 &"],
                   check=True)
    try:
        time.sleep(0.3)
        with LoadWatch() as watch:
            time.sleep(1.0)
    finally:
        flag.write_text("stop")
    assert watch.load.others_cores > 0.2  # the spinner's share of a core, on a host that may be busy


@pytest.mark.parametrize("others, before, loaded", [(0.05, 3.0, False), (0.6, 0.0, True), (None, 1.5, True),
                                                    (None, 0.5, False)])
def test_a_run_is_loaded_by_others_cpu_or_else_by_the_load_average(others, before, loaded):
    assert HostLoad((before, before), (0.0, 0.0), others, 2).loaded() is loaded


def test_our_cpu_is_split_by_process_with_a_module_s_name_for_its_label():
    """A busy child run with -m is counted under its module's name, this process as the client."""
    child = subprocess.Popen([sys.executable, "-m", "timeit", "-n", "1000000000", "pass"],
                             stdout=subprocess.DEVNULL)
    try:
        with LoadWatch() as watch:
            end = time.monotonic() + 0.8
            while time.monotonic() < end:
                pass
    finally:
        child.kill()
        child.wait()
    ours = watch.load.ours
    assert ours["timeit"] > 0.2 and ours["client"] > 0.2
    assert watch.load.cpu_line("x").startswith("CPU of x (seconds, by process): ")


def test_no_cpu_split_gives_no_line():
    assert HostLoad((0.0, 0.0), (0.0, 0.0), None, 2).cpu_line("vllm") is None
