"""The whole pipeline on a tiny random Qwen3-VL: prompt -> rubric -> extraction -> verification -> QA -> verdict.

A random model writes nonsense, but grammar-constrained decoding must still make every
agent output valid against its schema, closed within its token budget.
"""
from __future__ import annotations

import csv

import pytest

from fager.baselines import VQAScoreBaseline, baseline_ab_test
from fager.core import Fager
from fager.schema import QAItems, ReferenceExtraction, Rubric, Verification

from fagent_helpers import TINY_PACK, noise


@pytest.fixture(scope="module")
def abo_prompts(abo_dir):
    with open(abo_dir / "prompts.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[:5]
    return [r["index"] for r in rows], [r["prompt"] for r in rows]


@pytest.fixture(scope="module")
def built(tiny_judge, abo_prompts, tmp_path_factory):
    ids, prompts = abo_prompts
    refs = tmp_path_factory.mktemp("refs")
    noise(100).save(refs / f"{ids[0]}.png")                 # <id>.png
    (refs / ids[2]).mkdir()
    for j in range(2):                                      # <id>/*.png
        noise(200 + j, (40, 40)).save(refs / ids[2] / f"{j}.png")
    fager = Fager(tiny_judge, pack=TINY_PACK, store=tmp_path_factory.mktemp("store"), references=refs)
    builds = fager.build(prompts, ids=ids)
    return fager, builds


def test_every_agent_output_is_schema_valid(built, abo_prompts):
    fager, builds = built
    ids, prompts = abo_prompts
    assert [b.prompt for b in builds] == prompts
    for build, n_refs in zip(builds, (1, 0, 2, 0, 0)):
        assert build.errors == [], build.errors
        record = build.record
        # each record field passed its pydantic model on the way in; check again from JSON
        Rubric.model_validate_json(record.proposal.model_dump_json())
        Verification.model_validate_json(record.verification.model_dump_json())
        assert len(record.references) == n_refs
        for extraction in record.references:
            ReferenceExtraction.model_validate_json(extraction.model_dump_json())
            assert len(extraction.summary) <= 8 and len(extraction.visual_elements) <= 2
        facts = record.rubric.facts()
        assert len(facts) >= 1 and all(len(f.fact) <= 8 for f in facts)
        QAItems(items=record.qa.items)
        repeated = sum(int(n.split()[3]) for n in build.notes) if build.notes else 0
        assert len(record.qa.items) == len(facts) - repeated
        assert {(i.level, i.category, i.importance, i.source_fact) for i in record.qa.items} <= \
            {(f.level, f.category, f.importance, f.fact) for f in facts}


def test_build_is_reused_from_the_store(built, abo_prompts, tiny_judge):
    fager, builds = built
    ids, prompts = abo_prompts
    calls = tiny_judge.stats.model_calls
    again = fager.build(prompts, ids=ids)
    assert tiny_judge.stats.model_calls == calls and all(b.reused for b in again)
    assert [b.qa for b in again] == [b.qa for b in builds]


def test_verdicts_from_the_tiny_judge(built, abo_prompts, tiny_judge):
    fager, builds = built
    ids, prompts = abo_prompts
    images = [noise(i, (64, 64)) for i in range(5)]
    verdicts = fager.score(images, prompts, ids=ids)
    for verdict, build in zip(verdicts, builds):
        assert verdict.counts.failed == 0, verdict.parse_failures
        assert verdict.provenance["qa_source"] == "reused" and verdict.provenance["backend"] == "transformers"
        assert verdict.decision in ("keep", "edit", "regenerate") and 0 <= verdict.score <= 100
        asked = {q.level for q in verdict.questions if q.status == "answered"}
        if verdict.decision == "regenerate":
            assert asked <= {"level_1"}
        else:
            assert asked == {q.level for q in build.qa.items}
        assert (verdict.feedback is not None) == (verdict.decision != "keep")
        assert all(len(q.rationale) <= 10 for q in verdict.questions)


def test_vqascore_baseline_on_the_tiny_judge(tiny_judge, abo_prompts):
    ids, prompts = abo_prompts
    baseline = VQAScoreBaseline(tiny_judge)
    factual, generated = [noise(300 + i) for i in range(5)], [noise(400 + i) for i in range(5)]
    scores = baseline.score(factual, prompts, ids)
    assert all(0.0 < s < 1.0 for s in scores) and len(set(scores)) > 1
    report = baseline_ab_test(baseline, factual, generated, prompts, ids)
    again = baseline.score(generated, prompts, ids)
    expected = sum(a >= b for a, b in zip(scores, again))
    assert report.pairs == 5 and report.correct == expected
