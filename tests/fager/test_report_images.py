"""`fager report` finds the image of README's own quick start (issue 52, item 2): `fager score` keeps
each image as the items CSV names it (relative to the CSV's folder), and the manifest records that
folder, so the report shows the picture from any working folder; a bare file name would lose it."""
import json
import re
import shutil
from pathlib import Path

from vlmjudge.cli import main

REPO = Path(__file__).resolve().parents[2]
#: The judge of these tests: answers "Yes" to every question (tests/vlmjudge/cli).
JUDGE = ["--backend", "cli_bad_inputs_judge:ConstantJudge", "--model", "m"]


def readme_items_csv() -> str:
    """The items CSV README's FAGER quick start writes with `printf '...' > items.csv`."""
    found = re.search(r"printf '([^']*)' > items\.csv", (REPO / "README.md").read_text(encoding="utf-8"))
    assert found, "README's FAGER quick start writes items.csv with printf"
    return found.group(1).replace("\\n", "\n")


def quick_start(folder: Path) -> Path:
    """README's FAGER quick start in `folder` (its example image where README's CSV names it), with a
    one-question QA set; returns the run's details.jsonl."""
    from fager.qa_store import format_qa_csv
    from fager.schema import QAItem, QASet

    text = readme_items_csv()
    (folder / "items.csv").write_text(text, encoding="utf-8")
    index, prompt, image = text.splitlines()[1].split(",")
    target = folder / image
    target.parent.mkdir(parents=True)
    shutil.copy(REPO / image, target)
    qa = QASet(index=index, prompt=prompt, items=[QAItem(level="level_1", category="counting", importance="high",
                                                         question="Are there three apples?",
                                                         source_fact="There are three apples")])
    (folder / "QA.csv").write_text(format_qa_csv([qa]), encoding="utf-8")
    details = Path("fager") / "details.jsonl"
    assert main(["fager", "score", "items.csv", "--qa", "QA.csv", *JUDGE, "--out", str(details), "--quiet"]) == 0
    return folder / details


def shown_images(page: Path) -> list[str]:
    """The names under the thumbnails that loaded in the report's lowest-scored list."""
    lowest = page.read_text(encoding="utf-8").split('id="lowest"')[1]
    return re.findall(r'<img src="data:image/jpeg;base64,[^"]+" alt="([^"]+)"', lowest)


def test_readme_quick_start_then_report_shows_the_image(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    details = quick_start(tmp_path)
    image = readme_items_csv().splitlines()[1].split(",")[2]
    [record] = [json.loads(line) for line in details.read_text().splitlines()]
    assert record["image"] == image and record["status"] == "scored"  # as the CSV names it, not its bare name
    manifest = json.loads(details.with_name("details.manifest.json").read_text())
    assert manifest["input_root"] == str(tmp_path.resolve())
    assert main(["fager", "report", "fager/", "--out", "fager-report/"]) == 0
    page = tmp_path / "fager-report" / "report.html"
    assert shown_images(page) == [image] and "missing image" not in page.read_text()


def test_the_report_finds_the_image_from_another_working_folder(tmp_path, monkeypatch):
    run = tmp_path / "trial"
    run.mkdir()
    monkeypatch.chdir(run)
    details = quick_start(run)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["fager", "report", str(details.parent), "--out", "report"]) == 0
    assert shown_images(elsewhere / "report" / "report.html") == [readme_items_csv().splitlines()[1].split(",")[2]]
