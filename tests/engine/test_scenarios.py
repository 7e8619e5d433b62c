"""Each scenario's defining facts, asserted on its timeline (the numbers its narration states)."""

from __future__ import annotations

import pytest

from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.vllm.snapshot import Snapshot
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from engine.lab.shared.prefill_cost import LLAMA_3_8B, flops_for_positions, prefill_cost


def play(name: str, mode: str | None = None) -> Timeline:
    scenario = load_scenario(name)
    return build_timeline(scenario, mode or scenario.modes[0])


def at(timeline: Timeline, key: str) -> Snapshot:
    """The snapshot of the (last) step narrated by ``key``."""
    return [s for s in timeline.steps if s.narration_key == key][-1].snapshot


def hit(snapshot: Snapshot, request_id: str) -> int:
    return snapshot.request(request_id).num_cached_tokens


def test_the_flagship_comes_first_and_every_scenario_plays() -> None:
    names = scenario_names()
    assert names[0] == "reset"
    for name in names:
        scenario = load_scenario(name)
        for mode in scenario.modes:
            timeline = build_timeline(scenario, mode)
            narration = dict(timeline.narration)
            for step in timeline.steps:
                assert step.narration_key in narration, (name, mode, step.narration_key)


def test_shared_prefix_hits_every_shared_block_and_stops_at_the_first_miss() -> None:
    t = play("shared-prefix")
    snap = at(t, "second_hits")
    assert hit(snap, "S2") == 16  # 4 shared blocks of 4 tokens
    s1, s2 = snap.request("S1").block_ids, snap.request("S2").block_ids
    assert s1[:4] == s2[:4] and s1[4] != s2[4]
    assert [snap.block(b).ref_cnt for b in s1[:4]] == [2, 2, 2, 2]
    assert (snap.stats.queries, snap.stats.hits) == (44, 16)


def test_exact_duplicate_hits_124_of_125_and_one_more_token_hits_all() -> None:
    t = play("exact-duplicate")
    snap = at(t, "duplicate_done")
    assert hit(snap, "P2") == 124 * 16
    doubled = [e for e in snap.hash_map if len(e.block_ids) == 2]
    assert len(doubled) == 1 and len(snap.hash_map) == 125
    assert hit(at(t, "one_more_done"), "P3") == 125 * 16


def test_prepending_one_token_changes_every_hash() -> None:
    t = play("prepend-token")
    snap = at(t, "prepended_done")
    p1 = {link.hash_label for link in snap.request("P1").chain}
    p2 = {link.hash_label for link in snap.request("P2").chain}
    assert len(p1) == 8 and len(p2) == 8 and not p1 & p2
    assert hit(snap, "P2") == 0
    assert hit(at(t, "appended_done"), "P3") == 32


def test_cache_salt_isolates_users_and_enters_the_first_block_only() -> None:
    t = play("cache-salt")
    last = t.steps[-1].snapshot
    assert hit(last, "alice-2") == 16
    assert hit(last, "bob-1") == 0
    assert hit(last, "fresh-1") == hit(last, "fresh-2") == 0
    chain = last.request("alice-1").chain
    assert chain[0].extra_keys == "('cache_salt', 'alice')"
    assert all(link.extra_keys is None for link in chain[1:])
    # same tokens, another salt: no common hash anywhere in the chain
    bob = {link.hash_label for link in last.request("bob-1").chain}
    alice = {link.hash_label for link in last.request("alice-2").chain}
    assert not bob & alice


def test_prompt_logprobs_skip_the_lookup_and_the_counters() -> None:
    t = play("prompt-logprobs")
    before, after = at(t, "first_done"), at(t, "logprobs_done")
    assert hit(after, "L1") == 0
    assert after.request("L1").skip_reading_prefix_cache
    assert (after.stats.queries, after.stats.hits) == (before.stats.queries, before.stats.hits)
    plain = at(t, "plain_done")
    assert hit(plain, "P2") == 16
    assert (plain.stats.queries, plain.stats.hits) == (36, 16)


def test_eviction_order_head_first_cached_last_and_child_before_parent() -> None:
    t = play("eviction-order")
    r1_done = at(t, "r1_done")
    assert r1_done.free_queue == (3, 4, 5, 6, 7, 8, 9, 2, 1)  # partial to head, 2 then 1 to tail
    assert at(t, "r2_done").free_queue == (5, 6, 7, 8, 9, 2, 1, 4, 3)
    parent = at(t, "r3_hits_parent")
    assert parent.request("R3").block_ids[0] == 1 and parent.block(2).state == "free-cached"
    step = next(s for s in t.steps if s.narration_key == "r4_evicts")
    removed = [e.to_dict() for e in step.snapshot.events if e.type == "BlockRemoved"]
    assert len(removed) == 1
    # block 2 lost its hash while its parent, block 1, is held by R3
    assert step.snapshot.block(1).state == "held"
    assert parent.block(2).block_hash is not None
    assert parent.block(2).block_hash.endswith(removed[0]["block_hashes"][0])


def test_preempted_request_resumes_from_the_cache() -> None:
    t = play("preemption")
    preempt = next(s for s in t.steps if s.narration_key == "preempt")
    assert preempt.result is not None and "preempted R2" in preempt.result
    assert preempt.snapshot.request("R2").status == "PREEMPTED"
    stats = at(t, "resume").stats
    assert (stats.preempted_requests, stats.preempted_queries, stats.preempted_hits) == (1, 17, 16)


def test_churn_evicts_the_preempted_chain_deepest_first() -> None:
    stats = at(play("preemption-churn"), "resume").stats
    assert (stats.preempted_queries, stats.preempted_hits) == (17, 4)


def test_after_a_keep_reset_the_chain_heals_once_the_prefix_is_recached() -> None:
    t = play("keep-aftermath")
    assert t.modes == ("keep",)
    fill = at(t, "fill")
    assert len(fill.hash_map) == 1  # B's post-reset block, unreachable
    assert hit(at(t, "c_recaches"), "C") == 0
    d = at(t, "d_hits")
    assert hit(d, "D") == 16
    post_reset_block = fill.hash_map[0].block_ids[0]
    assert post_reset_block in d.request("B").block_ids


def test_prefill_cost_of_the_seeds_example() -> None:
    cost = prefill_cost(2200, 2000, 445e12)
    assert round(cost.flops_without_cache / 1e12, 2) == 36.60
    assert round(cost.flops_with_cache / 1e12, 2) == 3.43
    assert round(cost.speedup, 1) == 10.7
    assert round(cost.redundant_fraction * 100, 1) == 90.6
    assert round(cost.seconds_saved * 1000) == 75  # "about 74 ms": 74.5


def test_prefill_cost_sums_the_per_token_formula() -> None:
    # 2P + 4 L h d_h s, summed over positions one by one
    slow = sum(2 * 8.03e9 + 4 * 32 * 32 * 128 * s for s in range(10, 50))
    assert flops_for_positions(LLAMA_3_8B, 10, 50) == pytest.approx(slow)
    with pytest.raises(ValueError, match="cached_tokens"):
        prefill_cost(100, 100, 1e12)
