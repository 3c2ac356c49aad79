"""The optimized TerraVis path equals the reference path (the public release's pattern), and
its work counters are what shared-prefix batching promises. Correctness only, not timing."""
import pytest

from bench import judge_on
from bench.terravis_paths import expected_encodes
from bench.terravis_setup import bench_pack, positive_rate, record_view


def test_optimized_records_equal_reference_records(shifted):
    from terravis import TerraVis
    from terravis.core import make_items
    from terravis.workflow import WorkflowConfig, reference_records
    model, processor, images = shifted
    pack = bench_pack()
    ref_judge = judge_on(model, processor, prefix_reuse=False, batch_size=18)
    opt_judge = judge_on(model, processor)
    reference = reference_records(ref_judge, make_items(images), pack, WorkflowConfig())
    optimized = TerraVis(opt_judge, pack=pack).score(images)
    assert [record_view(r) for r in optimized] == [record_view(r) for r in reference]
    rate = positive_rate(optimized)
    assert 0.1 <= rate <= 0.5  # both decisions occur, so the comparison is not trivial
    positives = [c for r in optimized for c in r.checks if c.detected]
    assert positives and all(c.evidence_parse_ok is not None for c in positives)
    assert any(c.evidence for c in positives) and {c.severity for c in positives} <= {"major", "minor"}
    # one vision-tower run per image (the vision cache and the prefix KV store serve its later
    # stages), against 19 per image in the reference; with the vision cache off, the KV store
    # alone still serves them; with both off, one per image and stage that needs it
    assert opt_judge.stats.images_encoded == len(images)
    assert ref_judge.stats.images_encoded == 19 * len(images)
    kv_only = judge_on(model, processor, vision_cache_mb=0)
    assert [record_view(r) for r in TerraVis(kv_only, pack=pack).score(images)] == [record_view(r) for r in reference]
    assert kv_only.stats.images_encoded == len(images) and kv_only.stats.prefix_cache_hits > 0
    per_stage = judge_on(model, processor, vision_cache_mb=0, kv_cache_mb=0)
    again = TerraVis(per_stage, pack=pack).score(images)
    assert [record_view(r) for r in again] == [record_view(r) for r in reference]
    assert per_stage.stats.images_encoded == expected_encodes(again, pack.severity_sees_image) > len(images)


def test_blocks_of_images_give_the_same_records_and_encode_each_image_once(shifted):
    from terravis.core import make_items
    from terravis.workflow import Workflow, WorkflowConfig
    model, processor, images = shifted
    pack = bench_pack()
    whole_judge, block_judge = judge_on(model, processor), judge_on(model, processor)
    whole = Workflow(whole_judge, pack, WorkflowConfig()).run(make_items(images))
    flow = Workflow(block_judge, pack, WorkflowConfig(), block_images=2)
    blocks = flow.run(make_items(images))
    assert [record_view(r) for r in blocks] == [record_view(r) for r in whole]
    assert [r.id for r in blocks] == [r.id for r in whole]
    assert block_judge.stats.images_encoded == len(images)
    assert flow.counts["detection"] == 18 * len(images)
    with pytest.raises(ValueError, match="block_images"):
        Workflow(block_judge, pack, WorkflowConfig(), block_images=0)
    from terravis import TerraVis
    tv = TerraVis(judge_on(model, processor), pack=pack, block_images=1)
    assert [record_view(r) for r in tv.score(images)] == [record_view(r) for r in whole]
    with pytest.raises(ValueError, match="block_images"):
        TerraVis(block_judge, block_images=0)


def test_prefill_is_shared_prefixes_plus_suffixes(shifted):
    """Counted independently: per call, the processor's full length of each image's first
    request, plus every other request's tokens after what it shares with that one, less the
    text before the images that the images' first requests share (their stem, run once)."""
    from terravis import TerraVis
    model, processor, images = shifted
    judge = judge_on(model, processor, kv_cache_mb=0)  # within calls only: no prefix kept across them
    calls = []
    for name in ("choice_probs", "generate"):
        real = getattr(judge, name)

        def spy(requests, *args, _real=real, **kwargs):
            calls.append(list(requests))
            return _real(requests, *args, **kwargs)
        setattr(judge, name, spy)
    TerraVis(judge, pack=bench_pack()).score(images)
    expected = 0
    for requests in calls:
        groups = {}
        for r in requests:
            groups.setdefault(tuple(id(i) for i in r.images), []).append(r)
        firsts = []
        for group in groups.values():
            ids = [processor(text=[judge.prompt_text(r)], images=r.pil_images() or None,
                             return_tensors="pt")["input_ids"][0].tolist() for r in group]
            expected += len(ids[0])
            firsts.append(ids[0])
            for other in ids[1:]:
                common = next((k for k, (a, b) in enumerate(zip(ids[0], other)) if a != b), len(other))
                expected += len(other) - common
        if len(firsts) > 1 and () not in groups:  # images' first requests: text before the first image once
            image = model.config.image_token_id
            stem = min(f.index(image) for f in firsts if image in f)
            stem = next((k for k in range(stem) if len({f[k] for f in firsts}) > 1), stem)
            expected -= (len(firsts) - 1) * stem
    assert abs(judge.stats.prefill_tokens - expected) <= 0.1 * expected


def test_benchmark_prints_each_paths_ideal_and_ends_with_prefill_over_ideal_then_speedup(shifted):
    import io

    from bench.terravis_paths import AGAIN, run
    model, processor, images = shifted
    out = io.StringIO()
    measures = run(model, processor, images[:2], ablation_images=0, steps=False, flops_images=1, out=out)
    lines = out.getvalue().splitlines()
    opt, ref = measures["optimized"], measures["reference"]
    assert lines[-2] == f"prefill/ideal: {opt.prefill_tokens / opt.extra['ideal_prefill']:.3f}"
    assert lines[-1].startswith("speedup: ") and float(lines[-1].split()[1]) > 0
    # the optimized path is timed on both sides of the reference; the speedup is over their mean
    again = measures[AGAIN]
    assert again.prefill_tokens == opt.prefill_tokens and again.generated_tokens == opt.generated_tokens
    mean = (opt.seconds + again.seconds) / 2
    assert lines[-1] == f"speedup: {ref.seconds / mean:.2f}"
    assert any(line.startswith("optimized before / after the reference: ") for line in lines)
    # the reference prefills every prompt whole: above its ideal, by the prefixes its requests share
    assert 0 < 2 * ref.extra["ideal_prefill"] < ref.prefill_tokens
    assert 0 < opt.extra["ideal_prefill"] <= opt.prefill_tokens
    header = next(line for line in lines if line.startswith("path "))
    assert "ideal prefill" in header and "prefill/ideal" in header
    # one image's FLOPs counted per path: the reference runs every prompt whole, so more; the
    # FLOP rate is left out, since the speedup was measured on two images
    bound = next(line for line in lines if line.startswith("compute ratio"))
    assert float(bound.split(": ")[1]) > 1 and "speedup / compute ratio" not in bound
