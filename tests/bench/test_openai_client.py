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
