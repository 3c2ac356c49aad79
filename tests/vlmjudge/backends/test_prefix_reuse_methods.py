"""The benchmark's pattern on one transformers judge: TerraVis, then VIEScore2, then FAGER, then
TerraVis again over overlapping photos (a resumed run repeats images), each method's records
equal to those of a fresh judge (floats within 1e-5). TerraVis on photos 4-7 then 7-10 crashed
in the shared-prefix forward before the fix (gravel.jpg in both calls)."""
from pathlib import Path

import pytest
from nested_close import assert_nested_close

from fager.core import Fager
from fager.schema import QAItem, QASet
from terravis import TerraVis
from viescore2 import VIEScore2
from vlmjudge import load_judge
from vlmjudge.testing.demo import build_demo_judge

TOL = 1e-5
PHOTOS = sorted((Path(__file__).resolve().parents[2] / "data" / "photos" / "heldout").glob("*.jpg"))
QUESTIONS = (("Is the object there?", "level_1"), ("Is its colour right?", "level_1"),
             ("Is the scene plausible?", "level_2"))


def prompt(photo):
    return f"a photo of {photo.stem}"


def fager(judge, photos):
    sets = [QASet(prompt=prompt(p), index=p.stem, items=[
        QAItem(question=q, level=level, category="existence", importance="high", source_fact=q)
        for q, level in QUESTIONS]) for p in photos]
    verdicts = Fager(judge, feedback=False).score(photos, [prompt(p) for p in photos], qa_sets=sets,
                                                  ids=[p.stem for p in photos])
    return [v.model_dump(mode="json", exclude={"provenance"}) for v in verdicts]


STEPS = [("terravis", lambda judge: [r.to_json() for r in TerraVis(judge).score(PHOTOS[4:8])]),
         ("viescore2", lambda judge: [r.to_json() for r in VIEScore2(judge, "pq_sc+split").score(
             PHOTOS[6:10], [prompt(p) for p in PHOTOS[6:10]])]),
         ("fager", lambda judge: fager(judge, PHOTOS[7:10])),
         ("terravis again", lambda judge: [r.to_json() for r in TerraVis(judge).score(PHOTOS[7:11])])]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build_demo_judge(tmp_path_factory.mktemp("demo") / "judge")


def test_methods_in_turn_on_one_judge_record_as_fresh_judges(demo):
    assert PHOTOS[7].name == "gravel.jpg"
    judge = load_judge(demo, device="cpu")
    for name, step in STEPS:
        ours, fresh = step(judge), step(load_judge(demo, device="cpu"))
        assert_nested_close(ours, fresh, TOL, path=name)
    assert judge.stats.prefix_cache_hits > 0
    assert judge.stats.images_encoded == len(PHOTOS[4:11])  # each photo once, whichever method asked first
