"""The transformers judge runs each CPU batch on the cores other processes leave (issue 51, item 4):
the others' demand measured from /proc/stat, a count within torch's own, put back after the call."""
import pytest
import torch

from vlmjudge import Decoding, Request, load_judge
from vlmjudge.backends.hf import core_share
from vlmjudge.backends.hf.core_share import CoreShare, others_demand


@pytest.mark.parametrize("others, own, threads, demand", [
    (0.0, 1.9, 2, 0.0),          # quiet: nobody else
    (0.2, 1.0, 2, 0.2),          # a core left idle: what the others used is what they want
    (2 / 3, 4 / 3, 2, 1.0),      # saturated beside one busy process: its fair share was 2/3 of a core
    (4 / 3, 2 / 3, 1, 2.0),      # our one thread beside two busy processes
    (1.0, 0.0, 1, 1.0),          # we used nothing in the window: usage is all there is to read
])
def test_the_others_demand_is_their_usage_scaled_back_from_a_fair_share(others, own, threads, demand):
    assert others_demand(others, own, threads, cores=2) == pytest.approx(demand)


@pytest.mark.parametrize("demand, threads", [(0.0, 4), (0.3, 4), (0.8, 3), (1.0, 3), (2.2, 2), (3.3, 1), (9.0, 1)])
def test_the_count_is_the_cores_left_within_one_and_the_ceiling(demand, threads):
    assert CoreShare(ceiling=4, cores=4).threads_for(demand) == threads


def test_measure_reads_windows_of_at_least_the_minimum(monkeypatch):
    clock = iter([0.0, 0.05, 1.0, 2.0, 3.0])
    # machine busy seconds and own seconds at each reading: others busy 1 core from t=0 to 1, none after
    machine = iter([10.0, 10.1, 12.0, 13.5, 14.0])
    own = iter([5.0, 5.05, 6.0, 7.5, 8.0])
    monkeypatch.setattr(core_share.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(core_share, "machine_busy_seconds", lambda: next(machine))
    monkeypatch.setattr(core_share, "own_busy_seconds", lambda: next(own))
    share = CoreShare(ceiling=2, cores=2)
    assert share.measure() == 2  # the first reading opens the window
    assert share.measure() == 2  # 50 ms: too short to read, the count stays
    assert share.measure() == 1  # over [0, 1]: we used 1 core, others 1 (saturated, demand 2 x 1 / 1)
    assert share.measure() == 2  # over [1, 2]: 1.5 cores ours, none theirs
    assert share.measure() == 2


def test_without_proc_stat_nothing_adapts(monkeypatch):
    monkeypatch.setattr(core_share, "machine_busy_seconds", lambda: None)
    share = CoreShare(ceiling=3, cores=4)
    assert [share.measure() for _ in range(3)] == [3, 3, 3]


def test_proc_stat_is_read_as_busy_seconds():
    busy = core_share.machine_busy_seconds()
    assert busy is None or busy > 0


@pytest.mark.parametrize("value, on", [("0", False), ("off", False), ("1", True), ("", True)])
def test_the_environment_turns_the_default_off(monkeypatch, value, on):
    monkeypatch.setenv(core_share.ENV, value)
    monkeypatch.setattr(core_share, "usable_cores", lambda: 2)
    monkeypatch.setattr(core_share, "machine_busy_seconds", lambda: 1.0)
    assert core_share.share_cores_default() is on


def test_a_judge_runs_its_batches_on_the_measured_count_and_gives_torch_back_its_own(tiny_vlm_path, noise,
                                                                                   monkeypatch):
    """Torch's count is 2 around the call; the governor says 1; every forward runs on 1 thread, the
    caller gets 2 back, and the answers are the ones a judge without the governor gives."""
    images = noise(3)
    requests = [Request(images=[img], text="Is there a cat?", prefix="Answer:",
                        decoding=Decoding(max_new_tokens=3)) for img in images]
    plain = load_judge(tiny_vlm_path(), device="cpu", batch_size=1, share_cores=False)
    shared = load_judge(tiny_vlm_path(), device="cpu", batch_size=1, share_cores=True)
    assert shared.manifest()["share_cores"] is True and plain.manifest()["share_cores"] is False
    monkeypatch.setattr(CoreShare, "measure", lambda self: 1)
    seen = []
    forward = shared._forward_or_split
    monkeypatch.setattr(shared, "_forward_or_split", lambda *a: seen.append(torch.get_num_threads()) or forward(*a))
    held = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        answers = shared.generate(requests)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(held)
    assert seen == [1, 1, 1]
    assert [a.text for a in answers] == [a.text for a in plain.generate(requests)]


def test_a_judge_with_the_governor_off_never_touches_the_count(tiny_vlm_path, noise, monkeypatch):
    judge = load_judge(tiny_vlm_path(), device="cpu", share_cores=False)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: pytest.fail("set_num_threads called"))
    judge.choice_probs([Request(images=[noise(1)[0]], text="Is it?", prefix="Answer:")], ["Yes", "No"])
