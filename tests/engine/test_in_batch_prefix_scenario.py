"""in-batch-prefix: what its narration says is what each step shows. vLLM caches a
block when it is allocated, so a request hits one scheduled before it in the same
step; SGLang's lpm deprioritizes a request that shares a waiting one's prefix
(schedule_policy.py:346-400), fcfs does not."""

from __future__ import annotations

from functools import cache

from engine.lab.play.scenario import load_scenario
from engine.lab.play.sglang.snapshot import SGLangRequestRecord
from engine.lab.play.sglang.timeline import SGLangTimeline, build_sglang_timeline
from engine.lab.play.vllm.timeline import Timeline, build_timeline

FIRST, SECOND = 4, 5  # the two batches


@cache
def sglang(mode: str) -> SGLangTimeline:
    return build_sglang_timeline(load_scenario("in-batch-prefix"), mode, trace=False)


def request(mode: str, step: int, rid: str) -> SGLangRequestRecord:
    snapshot = sglang(mode).steps[step].snapshot
    return next(r for r in snapshot.requests if r.request_id == rid)


def test_the_steps_are_the_batches() -> None:
    for mode in ("fcfs", "lpm"):
        keys = [s.narration_key for s in sglang(mode).steps]
        assert keys[FIRST : SECOND + 1] == ["first_batch", "second_batch"]


def test_vllm_shares_the_prefix_within_the_step() -> None:
    timeline: Timeline = build_timeline(load_scenario("in-batch-prefix"), "default", trace=False)
    step = timeline.steps[FIRST]
    assert step.snapshot.request("A2").num_cached_tokens == 40
    assert {r.request_id for r in step.snapshot.requests if r.status.startswith("FINISHED")} == {
        "A1",
        "A2",
        "C",
    }


def test_a_batch_holds_two_of_the_three() -> None:
    slots = sglang("fcfs").num_slots
    need = 44 + 1 + 1  # prompt, max_tokens and a page, strictly below what is left
    assert 2 * need < slots < 3 * need


def test_fcfs_computes_the_prefix_twice_and_lpm_once() -> None:
    fcfs = sglang("fcfs").steps[FIRST]
    assert fcfs.facts.admitted == ("A1", "A2") and fcfs.snapshot.waiting == ("C",)
    assert request("fcfs", FIRST, "A2").hit_tokens == 0
    assert len(fcfs.facts.splits) == 1 and len(fcfs.facts.taken_and_freed) == 40  # A2's copy
    lpm = sglang("lpm").steps[FIRST]
    ranked = [w.request_id for w in lpm.facts.walks if w.phase == "priority"]
    assert ranked == ["A1", "A2", "C"]
    assert all(w.matched_tokens == 0 for w in lpm.facts.walks if w.phase == "priority")
    admitted_order = [w.request_id for w in lpm.facts.walks if w.phase == "admit"]
    assert admitted_order == ["A1", "C", "A2"]  # A2 last: deprioritized
    assert lpm.facts.admitted == ("A1", "C") and lpm.snapshot.waiting == ("A2",)
    assert request("lpm", SECOND, "A2").hit_tokens == 40
