"""flush-cache: what its narration says is what each step shows, on both engines.
vLLM 0.33.0 resets once no block is in use; SGLang 0.5.23's flush_cache only when the
scheduler is fully idle (managers/scheduler.py:5337-5360, 5518-5547)."""

from __future__ import annotations

from engine.lab.play.sglang.snapshot import ROOT_ID
from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.timeline import Timeline
from tests.engine.scenario_steps import sglang_timeline, vllm_timeline
from tests.engine.scenario_steps import step_index as at


def vllm() -> Timeline:
    return vllm_timeline("flush-cache")


def sglang() -> SGLangTimeline:
    return sglang_timeline("flush-cache")


def test_the_three_calls_return_what_the_texts_say() -> None:
    keys = ("reset_busy", "reset_after", "reset_idle")
    assert [vllm().steps[at(vllm(), k)].result for k in keys] == ["False", "True", "True"]
    assert [sglang().steps[at(sglang(), k)].result for k in keys] == ["False", "False", "True"]
    # both engines have A running at the first call and finished by the second
    for timeline in (vllm(), sglang()):
        assert "A" in timeline.steps[at(timeline, "reset_busy")].snapshot.running
        after = timeline.steps[at(timeline, "reset_after")].snapshot
        assert not after.running and not after.waiting


def test_sglangs_warnings_count_what_the_texts_say() -> None:
    busy = sglang().steps[at(sglang(), "reset_busy")]
    after = sglang().steps[at(sglang(), "reset_after")]
    # leaves A out (the prefill batch is not merged yet), then counts it (not filtered yet)
    assert [line.message.split("#running-req: ")[1] for line in busy.snapshot.logs] == ["0"]
    assert [line.message.split("#running-req: ")[1] for line in after.snapshot.logs] == ["1"]
    assert busy.snapshot.waiting == () and after.snapshot.running == ()


def test_what_sglangs_steps_show() -> None:
    runs = sglang().steps[at(sglang(), "a_runs")].snapshot
    (prompt_node,) = [n for n in runs.nodes if n.node_id != ROOT_ID]
    assert prompt_node.lock_ref > 0  # locked while A runs
    done = sglang().steps[at(sglang(), "a_done")]
    (tail,) = done.facts.inserted
    node = next(n for n in done.snapshot.nodes if n.node_id == tail)
    assert node.parent == prompt_node.node_id  # the part past the prompt
    assert all(n.lock_ref == 0 for n in done.snapshot.nodes if n.node_id != ROOT_ID)
    flushed = sglang().steps[at(sglang(), "reset_idle")].snapshot
    assert [n.node_id for n in flushed.nodes] == [ROOT_ID]
    assert list(flushed.free_slots) == sorted(flushed.free_slots)
    assert len(flushed.free_slots) == flushed.num_slots


def test_b_hits_nothing_on_both_after_the_reset() -> None:
    assert vllm().steps[-1].snapshot.request("B").num_cached_tokens == 0
    (b,) = [r for r in sglang().steps[-1].snapshot.requests if r.request_id == "B"]
    assert b.hit_tokens == 0
