"""The replay's fidelity table: per method, cases replayed, exact matches, release bugs, deviations.

Printed at the end of any run that replays golden cases (docs/fidelity.md quotes it).
"""
from collections import Counter, defaultdict

_TALLY: dict[str, Counter] = defaultdict(Counter)


def _method(nodeid: str) -> str | None:
    """The method a golden case belongs to, from its test id (`<corpus id>` starts with the method)."""
    if "tests/golden/" not in nodeid.replace("\\", "/") or "[" not in nodeid:
        return None
    case_id = nodeid.split("[", 1)[1]
    prefix = case_id.split(".", 1)[0]
    return {"tv": "terravis", "vs2": "viescore2", "fg": "fager", "rg": "regeneration"}.get(prefix, prefix)


def pytest_runtest_logreport(report):
    method = _method(report.nodeid)
    if method is None or (report.when != "call" and not report.skipped):
        return
    tally = _TALLY[method]
    if report.when == "call" and report.passed:
        tally["exact"] += 1
    elif hasattr(report, "wasxfail"):
        tally["release bug" if "release bug" in report.wasxfail else "deviation"] += 1
    elif report.failed:
        tally["failed"] += 1
    elif report.skipped:
        tally["skipped"] += 1


def pytest_terminal_summary(terminalreporter):
    if not _TALLY:
        return
    write = terminalreporter.write_line
    write("")
    write("golden replay fidelity (per method):")
    write(f"{'method':<14}{'cases':>7}{'exact':>7}{'exact %':>9}{'release bug':>13}{'deviation':>11}{'failed':>8}")
    total = Counter()
    for method in sorted(_TALLY):
        tally = _TALLY[method]
        total.update(tally)
        _row(write, method, tally)
    _row(write, "all", total)


def _row(write, name, tally):
    cases = sum(tally.values())
    share = 100.0 * tally["exact"] / cases if cases else 0.0
    write(f"{name:<14}{cases:>7}{tally['exact']:>7}{share:>8.1f}%{tally['release bug']:>13}"
          f"{tally['deviation']:>11}{tally['failed']:>8}")
