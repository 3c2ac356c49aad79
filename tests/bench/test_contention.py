"""bench.contention: the spinners it starts are gone after their block, the governor setting it
asks for is the judge's, and bad arguments are refused before any model is built."""
import psutil
import pytest

from bench import contention


def test_busy_processes_spin_during_the_block_and_are_gone_after():
    me = psutil.Process()
    before = {p.pid for p in me.children()}  # a test worker may hold children of its own
    with contention.busy_processes(2):
        spinners = [p for p in me.children() if p.pid not in before]
        assert len(spinners) == 2 and all(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in spinners)
    assert not any(p.is_running() for p in spinners)


@pytest.mark.parametrize("governor", [True, False])
def test_the_judge_gets_the_setting_asked(tiny_vlm_path, governor):
    judge = contention.judge_for(tiny_vlm_path(), "float32", governor)
    assert judge.share_cores is governor and judge.manifest()["share_cores"] is governor


@pytest.mark.parametrize("argv", [["--busy", "0"], ["--rounds", "0"], ["--size", "8"], ["--images", "0"]])
def test_bad_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        contention.main(argv)
    assert exit_.value.code == 2 and "must be" in capsys.readouterr().err
