"""The client-cost benchmark runs both paths against its stub and prints their CPU per request."""
import re

import pytest

from bench.openai_client import main


def test_both_paths_send_every_request_and_report_their_cpu(capsys):
    assert main(["--requests", "24", "--concurrency", "4"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^(openai backend|http.client floor) +wall +([\d.]+) s +CPU +([\d.]+) s +([\d.]+) ms/request$",
                      out, re.M)
    assert [r[0] for r in rows] == ["openai backend", "http.client floor"]
    assert re.search(r"^openai backend / floor: [\d.]+x$", out, re.M)


@pytest.mark.parametrize("flag", ["--requests", "--concurrency"])
def test_a_count_below_one_is_refused(flag, capsys):
    with pytest.raises(SystemExit) as stop:
        main([flag, "0"])
    assert stop.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_a_stub_that_does_not_start_is_one_line_and_no_figure(monkeypatch, capsys):
    """The stub prints something other than its port: exit 2 with one line, no CPU figure printed."""
    monkeypatch.setattr("bench.openai_client.STUB", "print('address in use')")
    assert main(["--requests", "4", "--concurrency", "2"]) == 2
    captured = capsys.readouterr()
    assert "ms/request" not in captured.out
    assert captured.err.strip().splitlines() == [
        "bench.openai_client: RuntimeError: the stub server did not start (it printed 'address in use', not its port)"]


def test_replies_that_are_not_chat_completions_give_no_figure(monkeypatch, capsys):
    """A path whose replies are empty JSON objects: its figure would be over nothing, so the run
    stops with one line instead of a number."""
    import bench.openai_client as bench
    monkeypatch.setattr(bench, "judge_path", lambda base, concurrency: lambda sent: [{}] * len(sent))
    assert main(["--requests", "4", "--concurrency", "2"]) == 2
    assert "openai backend: 0 of 4 replies were chat completions" in capsys.readouterr().err
