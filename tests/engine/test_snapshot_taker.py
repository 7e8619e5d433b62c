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

from engine.lab.scenario import MODES, load_scenario, scenario_names
from engine.lab.scenario_file import scenario_from_dict
from engine.lab.snapshot import Snapshot, SnapshotTaker
from engine.lab.timeline import Timeline, _Run, build_timeline
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
