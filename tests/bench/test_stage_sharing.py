"""TerraVis stages arranged to share: later stages start where earlier ones left off (the prefix
KV store serves the image prefix of detection and evidence), severities of one check type run
in one call, and the per-stage accounting of the benchmark adds up. Counters only, no timing."""
from bench import judge_on
from bench.ideal import Trie, record, stage_breakdown, trie_nodes
from bench.terravis_setup import bench_pack, record_view
from bench.prompt_ids import prompt_token_keys


def _run(model, processor, images, **judge_kw):
    from terravis import TerraVis
    judge = judge_on(model, processor, **judge_kw)
    with record(judge) as rec:
        records = TerraVis(judge, pack=bench_pack()).score(images)
    return judge, rec, records, stage_breakdown(judge, rec.calls)


def test_trie_adds_only_new_nodes():
    trie = Trie()
    assert [trie.add(s) for s in ([1, 2, 3], [1, 2, 4], [1, 2], [5])] == [3, 1, 0, 1]
    assert trie.nodes == 5 == trie_nodes([[1, 2, 3], [1, 2, 4], [1, 2], [5]])


def test_later_stages_run_only_what_earlier_ones_did_not(shifted):
    model, processor, images = shifted
    judge, rec, records, stages = _run(model, processor, images)
    plain, _, plain_records, plain_stages = _run(model, processor, images, kv_cache_mb=0)
    assert [record_view(r) for r in records] == [record_view(r) for r in plain_records]
    assert list(stages) == ["eligibility", "detection", "evidence", "severity"]
    # the shares add up to the run's ideal, and no stage prefills less than its share
    assert sum(b for _, b, _ in stages.values()) == trie_nodes([prompt_token_keys(judge, r) for r in rec.requests])
    assert all(a >= b for a, b, _ in stages.values())
    assert sum(a for a, _, _ in stages.values()) == judge.stats.prefill_tokens
    assert all(t > 0 for _, _, t in stages.values())
    # detection starts from eligibility's image prefix: about its own share, where without the
    # store it runs the image again for every image (and the system prompt once, as their stem)
    det, det_share, _ = stages["detection"]
    assert det <= 1.1 * det_share and det < plain_stages["detection"][0]
    # evidence continues the detection prompts: only what follows the image's shared detection
    # prefix (its question, then the option word) runs, never the system prompt and image again
    keys = {}
    for stage, reqs, *_ in rec.calls:
        for r in reqs:
            keys.setdefault((stage, r.meta["item"]), []).append(prompt_token_keys(judge, r))
    after_shared = sum(len(k) - _common(keys[("detection", item)])
                       for (stage, item), ks in keys.items() if stage == "evidence" for k in ks)
    evidence = stages["evidence"][0]
    assert 0 < evidence <= after_shared < plain_stages["evidence"][0]
    assert judge.stats.prefix_cache_hits >= len(images) * 2 and judge.stats.images_encoded == len(images)


def test_severities_of_one_check_type_run_in_one_call(shifted):
    model, processor, images = shifted
    _, rec, records, stages = _run(model, processor, images)
    calls = [reqs for stage, reqs, *_ in rec.calls if stage == "severity"]
    types = [{r.meta["check"] for r in reqs} for reqs in calls]
    assert all(len(t) == 1 for t in types)
    positive_types = {c.type_id for r in records for c in r.checks if c.detected}
    assert set().union(*types) == positive_types and len(calls) == len(positive_types) > 1
    # one call per type: the type's text (name, checks, question) runs once per type, so the
    # stage prefills within 15% of its share of the ideal
    sev, share, _ = stages["severity"]
    assert sev <= 1.15 * share


def _common(seqs):
    """Length of the prefix all of `seqs` share."""
    n = 0
    while all(len(s) > n and s[n] == seqs[0][n] for s in seqs):
        n += 1
    return n
