"""The flagship scenario, "reset under load", in its three modes: what a learner must see."""

from __future__ import annotations

import pytest

from engine.lab.play.scenario import load_scenario
from engine.lab.play.vllm.snapshot import Snapshot
from engine.lab.play.vllm.timeline import Timeline, build_timeline

RESET_STEP = 1


@pytest.fixture(scope="module")
def timelines() -> dict[str, Timeline]:
    scenario = load_scenario("reset")
    return {mode: build_timeline(scenario, mode) for mode in scenario.modes}


def step_of(timeline: Timeline, key: str) -> int:
    return next(s.index for s in timeline.steps if s.narration_key == key)


def ref_cnts(snapshot: Snapshot) -> list[int]:
    return [b.ref_cnt for b in snapshot.blocks]


def test_starts_from_the_figure_of_the_write_up(timelines: dict[str, Timeline]) -> None:
    for timeline in timelines.values():
        start = timeline.steps[0].snapshot
        assert len(start.blocks) == 10
        assert [b.state for b in start.blocks] == (
            ["null", "free-cached", "held", "held", "held"] + ["free-empty"] * 5
        )
        assert start.running == ("B",)
        assert start.request("B").block_ids == (2, 3, 4)
        assert start.request("A").status == "FINISHED_LENGTH_CAPPED"
        assert start.free_queue == (5, 6, 7, 8, 9, 1)
        assert [e.block_ids for e in start.hash_map] == [(1,), (2,), (3,), (4,)]


def test_default_reset_is_refused_and_changes_nothing(timelines: dict[str, Timeline]) -> None:
    timeline = timelines["default"]
    before, reset = timeline.steps[0].snapshot, timeline.steps[RESET_STEP]
    assert reset.result == "False"
    assert [str(line) for line in reset.snapshot.logs] == [
        "WARNING vllm.v1.core.block_pool: "
        "Failed to reset prefix cache because some blocks (3) are not freed yet"
    ]
    after = reset.snapshot
    assert (after.blocks, after.free_queue, after.hash_map, after.requests) == (
        before.blocks,
        before.free_queue,
        before.hash_map,
        before.requests,
    )
    assert after.events == ()
    # B runs on and takes its fourth block from the head of the queue
    nxt = timeline.steps[RESET_STEP + 1].snapshot
    assert nxt.request("B").block_ids == (2, 3, 4, 5)
    assert nxt.request("B").num_computed_tokens == 13


def test_preempt_reset_frees_b_then_recomputes_it(timelines: dict[str, Timeline]) -> None:
    timeline = timelines["preempt"]
    reset = timeline.steps[RESET_STEP]
    assert reset.result == "True"
    after = reset.snapshot
    b = after.request("B")
    assert (b.status, b.num_computed_tokens, b.num_preemptions, b.block_ids) == (
        "PREEMPTED",
        0,
        1,
        (),
    )
    assert after.waiting == ("B",) and after.running == ()
    # B's blocks went to the tail, last block first; the reset kept the order
    assert after.free_queue == (5, 6, 7, 8, 9, 1, 4, 3, 2)
    assert after.hash_map == ()
    assert all(block.block_hash is None for block in after.blocks)
    assert [e.type for e in after.events] == ["AllBlocksCleared"]
    assert [line.message for line in after.logs] == ["Successfully reset prefix cache"]

    readmitted = timeline.steps[RESET_STEP + 1]
    assert readmitted.result == "scheduled B: 13 tokens"
    stats = readmitted.snapshot.stats
    assert (stats.preempted_requests, stats.preempted_queries, stats.preempted_hits) == (1, 13, 0)
    assert readmitted.snapshot.request("B").block_ids == (5, 6, 7, 8)


def test_keep_reset_clears_hashes_but_keeps_b_running(timelines: dict[str, Timeline]) -> None:
    timeline = timelines["keep"]
    before, reset = timeline.steps[0].snapshot, timeline.steps[RESET_STEP]
    assert reset.result == "True"
    after = reset.snapshot
    assert after.hash_map == ()
    assert [b.block_hash for b in after.blocks] == [None] * 10  # held blocks included
    assert ref_cnts(after) == ref_cnts(before)
    assert after.free_queue == before.free_queue
    assert after.request("B") == before.request("B")  # status, computed tokens, blocks
    assert [b.state for b in after.blocks[2:5]] == ["held"] * 3
    assert after.blocks[1].state == "free-empty"

    # B's next full block is cached again...
    fill = timeline.steps[step_of(timeline, "fill")].snapshot
    assert [(e.block_ids) for e in fill.hash_map] == [(5,)]
    assert fill.request("B").num_computed_tokens == 16
    # ...but a request with B's prompt finds nothing: the chain starts at block 0
    admitted = timeline.steps[step_of(timeline, "same_prompt_admitted")].snapshot
    assert admitted.request("C").num_cached_tokens == 0
    assert admitted.stats.hits == 0


def test_same_prompt_hits_differ_by_mode(timelines: dict[str, Timeline]) -> None:
    hits = {
        mode: t.steps[step_of(t, "same_prompt_admitted")].snapshot.request("C").num_cached_tokens
        for mode, t in timelines.items()
    }
    # default and preempt: 2 of 3 blocks (the num_tokens - 1 cap); keep: nothing
    assert hits == {"default": 8, "preempt": 8, "keep": 0}


def test_every_mode_ends_idle_with_all_blocks_free(timelines: dict[str, Timeline]) -> None:
    for timeline in timelines.values():
        last = timeline.steps[-1].snapshot
        assert last.running == () and last.waiting == ()
        assert sorted(last.free_queue) == list(range(1, 10))
