"""The run's SnapshotTaker remakes only what changed since its last snapshot: every
snapshot it takes must equal one taken from scratch at the same moment."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.lab.play.scenario import MODES, load_scenario, scenario_names
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.vllm.snapshot import Snapshot, SnapshotTaker
from engine.lab.play.vllm.timeline import Timeline, _Run, build_timeline
from tests.engine.test_playground import playground_scripts


def checked_build(build: Callable[[], Timeline]) -> int:
    """Run ``build``, checking each snapshot's blocks, free queues, hash maps and requests against a
    new taker's; returns how many snapshots were checked."""
    checked = 0
    real_snapshot = _Run.snapshot

    def compared(run: _Run, logs: Any) -> Snapshot:
        nonlocal checked
        snapshot = real_snapshot(run, logs)
        scratch = SnapshotTaker()
        scheduler = run.scheduler
        blocks, free_queue = scratch.pool_records(scheduler.kv_cache_manager.block_pool)
        assert snapshot.blocks == blocks
        assert snapshot.free_queue == free_queue
        assert snapshot.hash_map == scratch.hash_map_entries(scheduler.kv_cache_manager.block_pool)
        requests = tuple(scratch.request_record(r, scheduler) for r in run.requests)
        assert snapshot.requests == requests
        if scheduler.connector is not None:
            assert snapshot.offload is not None
            cpu_blocks, cpu_queue = scratch.pool_records(scheduler.connector.cpu_block_pool)
            assert (snapshot.offload.cpu_blocks, snapshot.offload.cpu_free_queue) == (
                cpu_blocks,
                cpu_queue,
            )
            cpu_map = scratch.hash_map_entries(scheduler.connector.cpu_block_pool)
            assert snapshot.offload.cpu_hash_map == cpu_map
        checked += 1
        return snapshot

    with mock.patch.object(_Run, "snapshot", compared):
        timeline = build()
    assert checked == len(timeline.steps)
    return checked


@pytest.mark.parametrize("name", scenario_names())
def test_every_built_in_snapshot_equals_one_from_scratch(name: str) -> None:
    scenario = load_scenario(name)
    for mode in scenario.modes:
        checked_build(partial(build_timeline, scenario, mode, trace=False))


@settings(max_examples=60, deadline=None)
@given(data=playground_scripts(), mode=st.sampled_from(MODES))
def test_random_playground_snapshots_equal_ones_from_scratch(
    data: dict[str, Any], mode: str
) -> None:
    checked_build(lambda: build_timeline(scenario_from_dict(data), mode, trace=False))


def test_a_block_written_outside_the_pools_methods_is_in_the_next_snapshot() -> None:
    """The taker remakes the blocks the pool's watch saw written, whoever wrote them, and
    walks the free queue again after any next link changed."""
    scenario = load_scenario(scenario_names()[0])
    run = _Run(scenario, scenario.modes[0])
    taker = SnapshotTaker()
    pool = run.scheduler.kv_cache_manager.block_pool
    taker.pool_records(pool)
    block = pool.blocks[3]
    block.ref_cnt += 2  # (not a pool method: only the watch can tell)
    queue = pool.free_block_queue
    head = queue.fake_free_list_head
    first = head.next_free_block
    assert first is not None
    head.next_free_block = first.next_free_block  # the first free block skipped
    blocks, free_queue = taker.pool_records(pool)
    scratch = SnapshotTaker().pool_records(pool)
    assert (blocks, free_queue) == scratch
    assert blocks[3].ref_cnt == 2 and free_queue[0] != first.block_id
    # The watched blocks read as the engine's own.
    assert type(block).__name__ == "KVCacheBlock" and repr(block).startswith("KVCacheBlock(")


def test_two_takers_of_one_pool_each_see_every_write() -> None:
    """A pool is watched once, however many takers read it; each has its own place in
    its writes, and one whose writes were forgotten (past the kept bound) reads all."""
    scenario = load_scenario(scenario_names()[0])
    run = _Run(scenario, scenario.modes[0])
    pool = run.scheduler.kv_cache_manager.block_pool
    first, second = SnapshotTaker(), SnapshotTaker()
    first.pool_records(pool)
    second.pool_records(pool)
    for round_ in range(3 * 8):
        for block in pool.blocks[1:]:
            block.ref_cnt += 1
        if round_ % 2:
            assert first.pool_records(pool) == SnapshotTaker().pool_records(pool)
    assert second.pool_records(pool) == first.pool_records(pool)
    assert {b.ref_cnt for b in second.pool_records(pool)[0][1:]} == {3 * 8}
