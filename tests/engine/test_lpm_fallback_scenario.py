"""lpm-fallback: what its narration says is what each step shows. Above
WAITING_QUEUE_PREFIX_MATCH_MAX (128) waiting requests SGLang's lpm falls back to fcfs
(schedule_policy.py:304-315); at or below it, it ranks the queue by match length."""

from __future__ import annotations

from functools import cache

from engine.lab.play.scenario import load_scenario
from engine.lab.play.sglang.timeline import SGLangTimeline, build_sglang_timeline
from engine.lab.play.vllm.timeline import build_timeline
from engine.sglang.schedule_policy import WAITING_QUEUE_PREFIX_MATCH_MAX


@cache
def sglang(mode: str) -> SGLangTimeline:
    return build_sglang_timeline(load_scenario("lpm-fallback"), mode, trace=False)


def test_lpm_falls_back_above_the_limit_and_ranks_below_it() -> None:
    lpm, fcfs = sglang("lpm").steps, sglang("fcfs").steps
    assert len(lpm[0].snapshot.waiting) > WAITING_QUEUE_PREFIX_MATCH_MAX == 128
    assert lpm[0].snapshot.waiting[-1] == "W"
    # the first batch: no ranking walk, fcfs's batch
    assert not [w for w in lpm[1].facts.walks if w.phase == "priority"]
    assert lpm[1].facts.admitted == fcfs[1].facts.admitted and "W" not in lpm[1].facts.admitted
    # the second: a short enough queue, ranked; W first with A's prompt
    assert len(lpm[1].snapshot.waiting) <= WAITING_QUEUE_PREFIX_MATCH_MAX
    ranked = {w.request_id: w.matched_tokens for w in lpm[2].facts.walks if w.phase == "priority"}
    assert ranked["W"] == 8 and all(n == 0 for rid, n in ranked.items() if rid != "W")
    assert lpm[2].facts.admitted[0] == "W"
    (a_node,) = [n.node_id for n in lpm[0].snapshot.nodes if n.token_ids[:1] == (1,)]
    assert a_node not in lpm[2].facts.evicted  # stamped by W's walk
    assert a_node in fcfs[2].facts.evicted and "W" in fcfs[2].snapshot.waiting


def test_vllm_evicts_as_blocks_and_w_waits_its_turn() -> None:
    timeline = build_timeline(load_scenario("lpm-fallback"), "default", trace=False)
    a_blocks = {b.block_id for b in timeline.steps[0].snapshot.blocks if b.state == "free-cached"}
    assert set(timeline.steps[1].facts.evicted) == a_blocks
    assert "W" in timeline.steps[-1].snapshot.waiting
