"""`bench.compare` on a few items: it writes TerraVis runs the way the method writes them (they pass
compare's checks), times compare and agreement in processes of their own, and prints one row each."""
from bench.compare import main, terravis_records
from vlmjudge.record_schema import check_record


def test_the_runs_are_terravis_records_with_every_check():
    records = terravis_records(60, seed=1, positive_rate=0.3)
    assert all(check_record(r, "bench") for r in records)
    scored = [r for r in records if r["status"] == "scored"]
    assert scored and all(len(r["checks"]) == 18 for r in scored)
    assert any(c["detected"] for r in scored for c in r["checks"]) and {r["meta"]["style"] for r in scored} > set()


def test_prints_a_row_per_command(tmp_path, capsys):
    assert main(["--items", "200", "--resamples", "20", "--agreement-items", "50", "--agreement-resamples", "10",
                 "--folder", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "compare 200 x 2 runs, 20 resamples (23 breakdown statistics)" in out
    assert "agreement 50 items, 10 resamples" in out and "peak MB" in out
    assert (tmp_path / "comparison200" / "report.html").is_file() and (tmp_path / "agreement" / "out").is_dir()
