"""A fleet of replicas behind a router (engine/lab/fleet/): one replica is the
single-engine replay; the routers' choices; stale routes; round-robin's split."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from engine.lab.fleet.in_order import InOrderFleet, run_fleet_in_order
from engine.lab.fleet.knobs import FleetKnobs
from engine.lab.fleet.routers import ROUTER_NAMES
from engine.lab.fleet.timed import TimedFleet
from engine.lab.traces.request_trace import TraceEntry, prompt_token_ids, read_trace
from engine.lab.traces.sglang.replay import replay_in_order_sglang
from engine.lab.traces.timed import TimedKnobs, run_trace_timed
from engine.lab.traces.vllm.replay import EventReplayRequest, HashedTrace, replay_in_order
from engine.lab.workload.presets import load_preset
from engine.lab.workload.sglang.runner import run_sglang_workload
from engine.lab.workload.vllm.runner import run_workload
from engine.lab.workload.workload import WorkloadError
from engine.vllm.kv_events import BlockStored
from engine.vllm.scheduler import Scheduler

CONVERSATION = "content/traces/conversation_trace.jsonl.gz"


def entry(line: int, ids: list[int], tokens: int | None = None) -> TraceEntry:
    return TraceEntry(line, line * 1000, tokens or 512 * len(ids), 4, tuple(ids))


def without_seconds(row: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in row.items() if k not in ("seconds", "per_request")}


@pytest.fixture(scope="module")
def slice_300() -> list[TraceEntry]:
    return read_trace(CONVERSATION, limit=300)


@pytest.mark.parametrize("router", ROUTER_NAMES)
def test_one_replica_is_the_single_engine_replay_on_vllm(
    slice_300: list[TraceEntry], router: str
) -> None:
    capacity = 200 * 512  # evicts: the pool's order matters
    single = replay_in_order(HashedTrace.of(slice_300), capacity)
    assert single.evictions > 0
    fleet = InOrderFleet(slice_300, FleetKnobs(replicas=1, router=router, capacity_tokens=capacity))
    fleet.run()
    (replay,) = fleet.replays()
    assert without_seconds(asdict(replay)) == without_seconds(asdict(single))
    assert fleet.result().hits == single.hits


@pytest.mark.parametrize("router", ROUTER_NAMES)
def test_one_replica_is_the_single_engine_replay_on_sglang(
    slice_300: list[TraceEntry], router: str
) -> None:
    entries = slice_300[:60]
    capacity = 60_000
    single = replay_in_order_sglang(entries, capacity, page_size=16)
    assert single.evictions > 0
    knobs = FleetKnobs(
        replicas=1, router=router, engine="sglang", capacity_tokens=capacity, block_size=16
    )
    fleet = InOrderFleet(entries, knobs)
    fleet.run()
    (replay,) = fleet.replays()
    assert without_seconds(asdict(replay)) == without_seconds(asdict(single))


# Hand-made: A and C share two blocks; B shares nothing.
A, B, C = [1, 2, 3], [9], [1, 2, 4]


def routes(router: str, entries: list[TraceEntry], replicas: int = 2, **knobs: object) -> list[int]:
    fleet = InOrderFleet(
        entries,
        FleetKnobs(replicas=replicas, router=router, capacity_tokens=64 * 512, **knobs),  # type: ignore[arg-type]
    )
    fleet.run()
    return fleet.routes


def test_routers_choices_on_a_hand_made_case() -> None:
    entries = [entry(0, A), entry(1, B), entry(2, C)]
    assert routes("round-robin", entries) == [0, 1, 0]
    # nothing running in order: every load is 0 at routing, so the tie goes round
    assert routes("least-loaded", entries, load_window=1) == [0, 1, 0]
    # C goes where A's two blocks are, though replica 0 carries a request more
    assert routes("prefix-aware", entries) == [0, 1, 0]
    # ... unless the load term weighs more than the two blocks
    assert routes("prefix-aware", [entry(0, A), entry(1, C)], load_weight=3.0) == [0, 1]
    # SGLang's policy: C matches 2/3 of A's units (> 0.3): A's worker; B matches
    # nothing: the worker with the smaller tree
    assert routes("cache-aware", entries) == [0, 1, 0]
    assert routes("cache-aware", [entry(0, A), entry(1, C)]) == [0, 0]
    assert routes("round-robin", [entry(0, A), entry(1, C)]) == [0, 1]


def test_prefix_aware_never_reads_the_pool_only_events() -> None:
    """With its events held back, the router does not know A's blocks yet: C goes by
    load, not to A's replica."""
    entries = [entry(0, A), entry(1, C)]
    assert routes("prefix-aware", entries, load_weight=0.5) == [0, 0]
    assert routes("prefix-aware", entries, load_weight=0.5, event_delay=1) == [0, 1]


def test_a_stale_route_is_counted_when_the_replica_evicted_behind_the_routers_back() -> None:
    # One replica of three blocks: B2 (three new blocks) evicts A's, then A comes back.
    b2 = [7, 8, 9]
    entries = [entry(0, A), entry(1, b2), entry(2, A)]
    knobs = FleetKnobs(replicas=1, router="prefix-aware", capacity_tokens=3 * 512)
    heard = InOrderFleet(entries, knobs)
    heard.run()
    assert (heard.stale_routes, heard.result().hits) == (0, 0)
    late = InOrderFleet(entries, FleetKnobs(**{**asdict(knobs), "event_delay": 1}))
    late.run()
    # the router still believed replica 0 held A's blocks: it had evicted them
    assert late.stale == [2]
    assert late.result().stale_routes == 1
    # SGLang's router's tree never hears of evictions at all
    blind = InOrderFleet(entries, FleetKnobs(**{**asdict(knobs), "router": "cache-aware"}))
    blind.run()
    assert blind.stale == [2]


def test_round_robin_hit_rate_falls_with_replicas_on_a_shared_prefix() -> None:
    # 24 requests: one 4-unit system prompt, then each request's own unit
    entries = [entry(i, [1, 2, 3, 4, 100 + i]) for i in range(24)]
    rates = [
        run_fleet_in_order(
            entries, FleetKnobs(replicas=n, router="round-robin", capacity_tokens=10_000 * 512)
        ).hit_rate
        for n in (1, 2, 4, 8)
    ]
    # each replica computes the system prompt once
    assert rates == [(24 - n) * 4 / (24 * 5) for n in (1, 2, 4, 8)]
    aware = run_fleet_in_order(
        entries,
        FleetKnobs(replicas=8, router="prefix-aware", capacity_tokens=10_000 * 512),
    )
    assert aware.hit_rate > rates[-1]


def test_the_stored_events_carry_the_prompts_own_tokens() -> None:
    one = entry(0, [5, 6, 7], tokens=1300)
    (hashes,) = HashedTrace.of([one]).block_hashes
    scheduler = Scheduler(16, 512, enable_kv_cache_events=True)
    manager = scheduler.kv_cache_manager
    request = EventReplayRequest("0", one, hashes)
    computed, hit = manager.get_computed_blocks(request)
    manager.allocate_slots(request, 1300 - hit, hit, computed)
    (stored,) = [e for e in manager.take_events() if isinstance(e, BlockStored)]
    assert list(stored.token_ids) == prompt_token_ids(one)[:1024]


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"replicas": 17}, "replicas must be between 1 and 16, not 17"),
        ({"router": "random"}, "router must be one of round-robin, least-loaded"),
        ({"capacity_tokens": 100}, "a capacity of 100 tokens holds no 512-token block"),
    ],
)
def test_bad_knobs_are_named(knobs: dict[str, object], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        InOrderFleet([entry(0, A)], FleetKnobs(**{"capacity_tokens": 4096, **knobs}))  # type: ignore[arg-type]


# -- with time ------------------------------------------------------------------------------


@pytest.mark.parametrize("router", ROUTER_NAMES)
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_one_replica_with_time_is_the_timed_replay(
    slice_300: list[TraceEntry], router: str, engine: str
) -> None:
    entries = slice_300[:40]
    unit = 64 if engine == "sglang" else None
    single = run_trace_timed(entries, TimedKnobs(100_000, engine, unit))
    knobs = FleetKnobs(
        replicas=1, router=router, engine=engine, capacity_tokens=100_000, block_size=unit
    )
    fleet = TimedFleet(entries, knobs)
    run = fleet.run()
    assert fleet.replicas[0].result().series == single.series
    assert run.hits == single.summary()["hits"] > 0


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_one_replica_plays_a_workload_as_the_workload_lab(engine: str) -> None:
    workload = load_preset("shared-prefix").workload.replace(requests=30, arrival=2)
    single = run_workload(workload) if engine == "vllm" else run_sglang_workload(workload)
    fleet = TimedFleet(workload, FleetKnobs(replicas=1, router="prefix-aware", engine=engine))
    fleet.run()
    assert fleet.replicas[0].result().series == single.series


def test_with_time_least_loaded_avoids_the_busy_replica() -> None:
    """Request 0 decodes for a long time on replica 0; the others are short and come one
    by one: least-loaded sends them to the idle replica, round-robin alternates."""
    long = TraceEntry(0, 0, 512, 2_000, (1,))
    short = [TraceEntry(i, i * 1_000, 512, 1, (10 + i,)) for i in range(1, 5)]
    entries = [long, *short]

    def routes_with_time(router: str) -> list[int]:
        knobs = FleetKnobs(replicas=2, router=router, capacity_tokens=100 * 512)
        fleet = TimedFleet(entries, knobs)
        run = fleet.run()
        assert run.completed and run.requests == 5
        return fleet.routes

    assert routes_with_time("round-robin") == [0, 1, 0, 1, 0]
    assert routes_with_time("least-loaded") == [0, 1, 1, 1, 1]
    # the series: each replica's waiting + running after every step (a short request is
    # done within the step it arrives in)
    fleet = TimedFleet(
        entries, FleetKnobs(replicas=2, router="least-loaded", capacity_tokens=100 * 512)
    )
    run = fleet.run()
    assert run.series["load"][0][:3] == [1, 1, 1] and max(run.series["load"][1]) == 0


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_workload_fleet_keeps_its_block_size_and_the_capacity_asked(engine: str) -> None:
    """The prefix-aware router believes what the events say, in the workload's own
    blocks (16 tokens): with room for everything no route is stale."""
    workload = load_preset("shared-prefix").workload.replace(requests=20, arrival=1)
    knobs = FleetKnobs(replicas=2, router="prefix-aware", engine=engine, capacity_tokens=64_000)
    fleet = TimedFleet(workload, knobs)
    run = fleet.run()
    assert run.capacity_tokens == 64_000
    assert run.block_size == (16 if engine == "vllm" else 1)
    assert run.believed_routes > 10 and run.stale_routes == 0
    # the system prompt is computed once per replica at most
    assert run.hit_rate > 0.8
