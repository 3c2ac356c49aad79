"""vLLM's metrics read alike from a server's /metrics text and from the engine: counters summed over
label sets, histograms as sums and counts, the HTTP histograms of the chat handler only; a run is
the difference of two readings, its phases follow from it, and the queues are sampled meanwhile."""
import time

import pytest

from bench.phases import engine_phases, phase_table
from bench.prometheus import QueueSampler, difference, parse_text

METRICS = """# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="bench"} 900.0
vllm:prompt_tokens_total{engine="1",model_name="bench"} 100.0
vllm:prompt_tokens_created{engine="0",model_name="bench"} 1.7e9
vllm:num_requests_running{engine="0",model_name="bench"} 12.0
vllm:num_requests_waiting_by_reason{engine="0",reason="capacity"} 3.0
vllm:num_requests_waiting_by_reason{engine="0",reason="deferred"} 2.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="0.3"} 4.0
vllm:request_prefill_time_seconds_sum{engine="0"} 3.5
vllm:request_prefill_time_seconds_count{engine="0"} 7.0
vllm:e2e_request_latency_seconds_sum{engine="0"} 5.0
vllm:e2e_request_latency_seconds_count{engine="0"} 7.0
http_request_duration_seconds_sum{handler="/v1/chat/completions",method="POST"} 6.5
http_request_duration_seconds_sum{handler="/tokenize",method="POST"} 0.25
http_request_duration_highr_seconds_sum 9.0
"""


def test_a_server_s_text_reads_as_totals_per_name():
    reading = parse_text(METRICS)
    assert reading["vllm:prompt_tokens"] == 1000.0 and reading["vllm:num_requests_running"] == 12.0
    assert reading["vllm:request_prefill_time_seconds_sum"] == 3.5
    assert reading["http_request_duration_seconds_sum"] == 6.5  # the chat handler's only
    assert reading["vllm:num_requests_waiting_by_reason:deferred"] == 2.0  # kept apart by reason
    assert not any(k.endswith(("_bucket", "_created")) or "highr" in k for k in reading)


def test_a_run_s_phases_come_from_the_difference_of_two_readings():
    before = parse_text(METRICS)
    after = {**before, "vllm:request_prefill_time_seconds_sum": 5.5, "vllm:e2e_request_latency_seconds_sum": 8.0,
             "vllm:e2e_request_latency_seconds_count": 10.0, "http_request_duration_seconds_sum": 10.0}
    run = difference(after, before)
    phases = engine_phases(run, client_seconds=4.5)
    assert phases.seconds["prefill"] == pytest.approx(2.0) and phases.requests == 3
    assert phases.seconds["frontend"] == pytest.approx(0.5) and phases.seconds["transport"] == pytest.approx(1.0)
    assert phases.seconds["encode"] is None and "estimates" in phases.source
    in_process = engine_phases({"vllm:request_prefill_time_seconds_sum": 1.0})
    assert in_process.seconds["frontend"] is None and in_process.seconds["transport"] is None
    line = phase_table({"vllm-serve": (3.0, phases)}).splitlines()[1].split()
    assert line[:5] == ["vllm-serve", "3.0", "request-s", "-", "2.00"] and line[-1] == "3"


def test_the_queues_are_sampled_while_the_run_lasts():
    calls = []

    def read():
        calls.append(1)
        if len(calls) == 2:
            raise OSError("busy")  # a failed read is a missing sample, not a failed run
        return {"vllm:num_requests_running": float(len(calls)), "vllm:num_requests_waiting": 1.0}

    with QueueSampler(read, every_s=0.02) as sampler:
        time.sleep(0.3)
    assert len(sampler.samples) >= 3 and len(sampler.samples) == len(calls) - 1
    assert "running mean" in sampler.line() and "waiting mean 1.0, max 1 (deferred mean 0.0" in sampler.line()
