"""A random tiny Qwen3-VL decoding under the output grammar always finishes with reason `stop` and
writes text that parses strictly, in every field configuration, with N = 16 and N = 8."""
from dataclasses import replace

import pytest

from viescore2 import VIEScore2, all_fields, read_answer, token_budget
from viescore2.parsing import parse_output
from viescore2.asking import make_items
from vlmjudge.requests import Decoding

PROMPTS = [f"a photo of object {i}" for i in range(10)]
#: The sweep checks the grammar, which no instruction text changes; a short instruction keeps the
#: tiny tokenizer's prefill small (the built-in instructions run in the other tests here).
SHORT = "Judge the last image for: {prompt}"


def check_strictly_parseable(text, fields, n, max_rows=None, max_cols=None):
    parsed = parse_output(text, n=n, strict=True)  # raises on any irregularity
    assert set(parsed.scores) == set(fields.score_keys), text
    if fields.grid == "none":
        assert parsed.localization is None, text
    grids = [] if parsed.localization is None else \
        [g for _, g in parsed.localization.items()] if fields.grid == "split" else [parsed.localization]
    for grid in grids:
        assert fields.marks or not grid.marks, text
        rows = {r for r, _ in grid.cells}
        assert len(rows) <= (max_rows or n), text
        assert all(sum(1 for r, _ in grid.cells if r == row) <= (max_cols or n) for row in rows), text
    return parsed


@pytest.mark.parametrize("n", [16, 8])
def test_greedy_every_configuration_stops_and_parses(tiny_qwen, noise_images, n):
    scorers = [VIEScore2(tiny_qwen, fields, n, pack=SHORT) for fields in all_fields()]
    items = make_items(noise_images, PROMPTS, [[noise_images[-1]] if i % 3 == 0 else None for i in range(10)])
    # all 14 configurations x 10 images in one batched call
    requests = [r for vs in scorers for r in vs.requests(items)]
    answers = tiny_qwen.generate(requests)
    assert len(answers) == 140
    for k, vs in enumerate(scorers):
        for answer in answers[10 * k:10 * k + 10]:
            assert answer.finish_reason == "stop", (vs.fields.key, answer)
            assert answer.num_tokens <= token_budget(vs.fields, n)
            check_strictly_parseable(answer.text, vs.fields, n)
            read = read_answer(answer, vs.fields, n)
            assert read["read_status"] == "ok" and read["missing"] == [], (vs.fields.key, answer.text)


@pytest.mark.parametrize("n", [16, 8])
def test_sampled_grids_with_rows_and_marks_stay_within_bounds(tiny_qwen, noise_images, n):
    """Hot sampling leaves `none` for real rows and marks; bounds keep the output short."""
    configs = ["pq_sc+split+marks", "overall+grid+marks", "grid"]
    scorers = [VIEScore2(tiny_qwen, f, n, pack=SHORT, max_rows=3, max_cols=3,
                         decoding=Decoding(max_new_tokens=token_budget(f, n, 3, 3), temperature=4.0, seed=11))
               for f in configs]
    items = make_items(noise_images, PROMPTS)
    requests = [r for vs in scorers for r in vs.requests(items)]
    for seed, request in enumerate(requests):  # one seed per request, so the draws differ
        request.decoding = replace(request.decoding, seed=seed)
    answers = tiny_qwen.generate(requests)
    assert len({a.text for a in answers}) > 20
    cells = marks = 0
    for k, vs in enumerate(scorers):
        for answer in answers[10 * k:10 * k + 10]:
            assert answer.finish_reason == "stop", (vs.fields.key, answer)
            parsed = check_strictly_parseable(answer.text, vs.fields, n, 3, 3)
            cells += len(parsed.union)
            marks += len(parsed.union.marks)
    assert cells >= 5 and marks >= 1  # rows, columns and marks were exercised, not only `none`


def test_pipeline_run_on_the_tiny_model(tiny_qwen, noise_images):
    vs = VIEScore2(tiny_qwen, "pq_sc+split", 16)
    result = vs.run(noise_images[:4], PROMPTS[:4], conditioning=[None, noise_images[5], [], None])
    assert result.counts["finish_stop"] == 4 and result.counts["parse_failures"] == 0
    assert all(r.status == "scored" and r.score is not None and 0 <= r.score <= 10 for r in result.records)
    assert result.records[1].num_conditioning == 1
    assert result.manifest["backend"] == "transformers" and result.manifest["constraint"] == "ebnf"
