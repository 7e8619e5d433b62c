"""retraction: what its narration says is what each step shows, on both engines. vLLM
preempts and finds its output blocks cached; SGLang retracts (schedule_batch.py:
3451-3580), frees the outputs' KV past cache_protected_len (release_req, :2360-2395)
and keeps the prompt its prefill put into the tree."""

from __future__ import annotations

from engine.lab.play.scenario import load_scenario
from engine.lab.play.sglang.snapshot import ROOT_ID, SGLangSnapshot
from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.timeline import Timeline
from tests.engine.scenario_steps import sglang_timeline, vllm_timeline
from tests.engine.scenario_steps import step_index as at


def vllm() -> Timeline:
    return vllm_timeline("retraction")


def sglang() -> SGLangTimeline:
    return sglang_timeline("retraction")


def tree_tokens(snapshot: SGLangSnapshot) -> int:
    return sum(n.num_tokens for n in snapshot.nodes)


def test_the_two_answers_do_not_fit_together() -> None:
    scenario = load_scenario("retraction")
    kv = [
        len(a.request.prompt_token_ids) + a.request.max_tokens - 1
        for a in scenario.script
        if a.request
    ]
    assert sum(kv) > scenario.sglang_slots() == sglang().num_slots
    assert sum(kv) > (scenario.num_gpu_blocks - 1) * scenario.block_size


def test_vllm_preempts_r2_and_finds_its_output_blocks_cached() -> None:
    before = vllm().steps[at(vllm(), "tight") - 1].snapshot
    tight = vllm().steps[at(vllm(), "tight")]
    assert "preempted R2" in (tight.result or "")
    partial = before.request("R2").block_ids[-1]
    assert tight.facts.taken_and_freed == (partial,)  # R2's partial block, R1's last
    back = vllm().steps[at(vllm(), "next")]
    stats = back.snapshot.stats
    prompt = back.snapshot.request("R2").num_prompt_tokens
    assert stats.preempted_hits > prompt  # outputs' full blocks among the hits
    # computed again: fewer tokens than a block
    assert stats.preempted_queries - stats.preempted_hits < vllm().block_size


def test_sglang_keeps_only_the_prompts_in_the_tree_while_they_run() -> None:
    for step in sglang().steps[at(sglang(), "r2_prefill") : at(sglang(), "next")]:
        assert tree_tokens(step.snapshot) == 8 + 12  # R1's and R2's prompts
        assert all(n.lock_ref > 0 for n in step.snapshot.nodes)  # the root too


def test_sglang_retracts_r2_and_keeps_its_prompt() -> None:
    before = sglang().steps[at(sglang(), "tight")].snapshot
    need = len(before.running)  # a slot per request at page size 1
    assert 0 < len(before.free_slots) < need
    assert before.evictable_size == 0  # both prompts locked
    outputs = {r.request_id: r.num_output_tokens for r in before.requests}
    assert outputs["R2"] < outputs["R1"]  # the fewest outputs go first
    step = sglang().steps[at(sglang(), "next")]
    assert step.facts.retraction is not None and step.facts.retraction.retracted == ("R2",)
    r2 = next(r for r in step.snapshot.requests if r.request_id == "R2")
    assert r2.status == "waiting" and r2.num_output_tokens == outputs["R2"]
    (prompt,) = [n for n in step.snapshot.nodes if n.token_ids[:1] == (101,)]
    assert prompt.num_tokens == r2.num_prompt_tokens and prompt.lock_ref == 0
    back = sglang().steps[at(sglang(), "after")]
    r2 = next(r for r in back.snapshot.requests if r.request_id == "R2")
    assert r2.hit_tokens == r2.num_prompt_tokens  # the whole prompt, no output
    (evicted,) = back.facts.evictions
    r1_tail = next(n for n in step.snapshot.nodes if n.node_id == evicted.node)
    assert r1_tail.parent != ROOT_ID and r1_tail.token_ids[0] >= 50_000  # R1's outputs
