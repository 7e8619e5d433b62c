"""Admission of waiting requests as vLLM 0.33 does it: the whole sequence must fit
(``scheduler_reserve_full_isl``), plus the ``watermark`` once something runs."""

from __future__ import annotations

import pytest

from engine.lab.play.scenario import ScenarioError, load_scenario, parse_scenario
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from engine.vllm.core import EngineCore
from engine.vllm.kv_cache_manager import KVCacheManager
from engine.vllm.request import Request, RequestStatus
from engine.vllm.scheduler import Scheduler

BLOCK_SIZE = 4


def scheduler(
    num_gpu_blocks: int,
    max_num_batched_tokens: int = 8192,
    scheduler_reserve_full_isl: bool = True,
    watermark: float = 0.0,
) -> Scheduler:
    return Scheduler(
        num_gpu_blocks,
        BLOCK_SIZE,
        max_num_batched_tokens=max_num_batched_tokens,
        scheduler_reserve_full_isl=scheduler_reserve_full_isl,
        watermark=watermark,
    )


def add(s: Scheduler, request_id: str, first: int, num_tokens: int, max_tokens: int = 4) -> None:
    tokens = range(first, first + num_tokens)
    s.add_request(Request(request_id, tokens, max_tokens, block_hasher=s.request_block_hasher))


def waiting(s: Scheduler) -> list[str]:
    return [r.request_id for r in s.waiting]


def free_blocks(s: Scheduler) -> int:
    return s.kv_cache_manager.block_pool.get_num_free_blocks()


# -- the whole sequence must fit ------------------------------------------------


@pytest.mark.parametrize("reserve_full_isl", [True, False])
def test_a_prompt_that_fits_only_chunk_wise_waits_with_the_check_on(
    reserve_full_isl: bool,
) -> None:
    # 6 usable blocks; R takes 2, so 4 are free: L's 20 tokens need 5, its
    # first chunk of 8 tokens (the budget left) needs 2.
    s = scheduler(7, max_num_batched_tokens=16, scheduler_reserve_full_isl=reserve_full_isl)
    add(s, "R", 1, 8)
    add(s, "L", 101, 20)
    output = s.schedule()
    if reserve_full_isl:
        assert output.num_scheduled_tokens == {"R": 8}
        assert waiting(s) == ["L"] and s.requests["L"].status == RequestStatus.WAITING
        assert free_blocks(s) == 4
    else:
        assert output.num_scheduled_tokens == {"R": 8, "L": 8}
        assert waiting(s) == [] and free_blocks(s) == 2


def test_a_prompt_that_fits_whole_is_admitted_even_with_no_block_to_spare() -> None:
    # L's 16 tokens need exactly the 4 free blocks
    s = scheduler(7, max_num_batched_tokens=16)
    add(s, "R", 1, 8)
    add(s, "L", 101, 16)
    assert s.schedule().num_scheduled_tokens == {"R": 8, "L": 8}
    assert waiting(s) == []


def test_the_first_waiting_request_that_does_not_fit_holds_back_the_ones_behind_it() -> None:
    s = scheduler(7, max_num_batched_tokens=16)
    add(s, "R", 1, 8)
    add(s, "L", 101, 20)  # 5 blocks, 4 free
    add(s, "S", 201, 4)  # 1 block would fit
    assert s.schedule().num_scheduled_tokens == {"R": 8}
    assert waiting(s) == ["L", "S"]


def with_a_cached_prefix(num_gpu_blocks: int, held: bool) -> Scheduler:
    """A's 16 tokens (1..16) computed, 8 per step, in 4 cached blocks: held by A
    (still running), or free in the queue after A finished and C (8 tokens)
    took 2 of the never-used blocks."""
    s = scheduler(num_gpu_blocks, max_num_batched_tokens=8)
    if held:
        add(s, "A", 1, 16)
        s.schedule()
        s.schedule()
        return s
    engine = EngineCore(s)
    add(s, "A", 1, 16, max_tokens=1)
    engine.step()
    engine.step()
    assert "A" not in s.requests
    add(s, "C", 301, 8)
    s.schedule()
    return s


def add_b(s: Scheduler, num_new_tokens: int) -> None:
    """B: A's 16 tokens, then its own."""
    tokens = [*range(1, 17), *range(1001, 1001 + num_new_tokens)]
    s.add_request(Request("B", tokens, block_hasher=s.request_block_hasher))


@pytest.mark.parametrize(
    ("num_new_tokens", "reserve_full_isl", "admitted"),
    [(12, True, True), (16, True, False), (16, False, True)],
)
def test_cache_hits_on_held_blocks_need_no_free_block(
    num_new_tokens: int, reserve_full_isl: bool, admitted: bool
) -> None:
    # 3 blocks free; B hits A's 4 held blocks: 12 more tokens need 3 new
    # blocks (fits), 16 need 4 (waits, unless only the first chunk counts)
    s = with_a_cached_prefix(8, held=True)
    s.scheduler_reserve_full_isl = reserve_full_isl
    assert free_blocks(s) == 3
    add_b(s, num_new_tokens)
    output = s.schedule()
    assert ("B" in output.num_scheduled_tokens) is admitted
    if admitted:
        assert s.requests["B"].num_computed_tokens == 16 + 8


@pytest.mark.parametrize(
    ("num_new_tokens", "reserve_full_isl", "admitted"),
    [(12, True, True), (16, True, False), (16, False, True)],
)
def test_cache_hits_on_free_blocks_count_as_blocks_to_take(
    num_new_tokens: int, reserve_full_isl: bool, admitted: bool
) -> None:
    # 7 blocks free, 4 of them A's cached ones: a hit takes such a block out of
    # the free queue, so 4 hits + 3 new blocks fit, 4 hits + 4 new do not
    s = with_a_cached_prefix(10, held=False)
    s.scheduler_reserve_full_isl = reserve_full_isl
    assert free_blocks(s) == 7
    add_b(s, num_new_tokens)
    output = s.schedule()
    assert ("B" in output.num_scheduled_tokens) is admitted
    if admitted:
        assert s.requests["B"].num_cached_tokens == 16


# -- the watermark ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("watermark", "num_gpu_blocks", "watermark_blocks"),
    [(0.0, 10, 0), (0.2, 10, 2), (0.3, 10, 3), (0.29, 10, 2), (0.29, 100, 28), (0.7, 10, 7)],
)
def test_the_watermark_is_a_fraction_of_the_whole_pool_rounded_down(
    watermark: float, num_gpu_blocks: int, watermark_blocks: int
) -> None:
    # int(0.29 * 100) is 28: the float product is 28.999999999999996, as in vLLM
    manager = KVCacheManager(num_gpu_blocks, BLOCK_SIZE, watermark=watermark)
    assert manager.watermark_blocks == watermark_blocks


def test_the_watermark_does_not_count_when_nothing_runs() -> None:
    # 9 usable blocks, watermark 2: a lone request may take all 9
    s = scheduler(10, watermark=0.2)
    add(s, "A", 1, 36)
    assert s.schedule().num_scheduled_tokens == {"A": 36}
    assert free_blocks(s) == 0


@pytest.mark.parametrize("reserve_full_isl", [True, False])
def test_the_watermark_counts_once_something_runs(reserve_full_isl: bool) -> None:
    # R takes 1 block, 8 are free, 2 must stay free: 7 blocks wait, 6 get in
    s = scheduler(10, watermark=0.2, scheduler_reserve_full_isl=reserve_full_isl)
    add(s, "R", 1, 4)
    add(s, "L", 101, 28)
    assert s.schedule().num_scheduled_tokens == {"R": 4}
    assert waiting(s) == ["L"]

    s = scheduler(10, watermark=0.2, scheduler_reserve_full_isl=reserve_full_isl)
    add(s, "R", 1, 4)
    add(s, "L", 101, 24)
    assert s.schedule().num_scheduled_tokens == {"R": 4, "L": 24}
    assert free_blocks(s) == 2


def test_a_running_request_may_eat_into_the_watermark() -> None:
    # A alone takes 8 of 9 blocks; the watermark is 5, yet A decodes into the last
    s = scheduler(10, watermark=0.5)
    engine = EngineCore(s)
    add(s, "A", 1, 32, max_tokens=3)
    engine.step()
    assert free_blocks(s) == 1
    assert engine.step().scheduler_output.num_scheduled_tokens == {"A": 1}
    assert free_blocks(s) == 0


# -- per scenario: [pool] options --------------------------------------------------


def test_the_check_is_on_and_the_watermark_zero_by_default() -> None:
    s = scheduler(10)
    assert s.scheduler_reserve_full_isl is True
    assert s.kv_cache_manager.watermark_blocks == 0
    scenario = load_scenario("reset")
    assert scenario.scheduler_reserve_full_isl is True and scenario.watermark == 0.0


def scenario_with_pool(**pool: object) -> None:
    parse_scenario("t", {"pool": {"num_gpu_blocks": 10, **pool}})


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        ({"scheduler_reserve_full_isl": "yes"}, "scheduler_reserve_full_isl must be true or false"),
        ({"scheduler_reserve_full_isl": 1}, "scheduler_reserve_full_isl must be true or false"),
        ({"watermark": "0.1"}, "watermark must be a number"),
        ({"watermark": True}, "watermark must be a number"),
        ({"watermark": 1.0}, "watermark is a fraction of the pool"),
        ({"watermark": -0.1}, "watermark is a fraction of the pool"),
    ],
)
def test_bad_pool_options_are_refused_up_front_in_one_line(
    pool: dict[str, object], message: str
) -> None:
    with pytest.raises(ScenarioError, match=message) as error:
        scenario_with_pool(**pool)
    assert "\n" not in str(error.value)


def test_pool_options_reach_the_scheduler() -> None:
    scenario = parse_scenario(
        "t",
        {
            "pool": {"num_gpu_blocks": 10, "scheduler_reserve_full_isl": False, "watermark": 0.2},
            "steps": [{"do": "add_request", "id": "R", "prompt": "1..4"}],
        },
    )
    assert scenario.scheduler_reserve_full_isl is False and scenario.watermark == 0.2
    # a whole-number watermark is a number too
    scenario_with_pool(watermark=0)


# -- the scenario ------------------------------------------------------------------


def play(mode: str) -> Timeline:
    return build_timeline(load_scenario("full-sequence-fit"), mode)


def scheduled(timeline: Timeline, request_id: str) -> int:
    """Tokens the request's steps scheduled, over the whole timeline."""
    total = 0
    for step in timeline.steps:
        for part in (step.result or "").removeprefix("scheduled ").split(";")[0].split(", "):
            rid, _, count = part.partition(": ")
            if rid == request_id:
                total += int(count.split()[0])  # "1 token", "7 tokens"
    return total


def steps_where(timeline: Timeline, request_id: str, status: str) -> list[str]:
    return [
        step.narration_key
        for step in timeline.steps[1:]
        if any(r.request_id == request_id and r.status == status for r in step.snapshot.requests)
    ]


def test_with_the_check_on_the_long_prompt_waits_then_runs_unpreempted() -> None:
    t = play("default")
    assert steps_where(t, "L", "WAITING") == [
        "long",
        "arrive",
        "s5",
        "s6",
        "s7",
        "decode_new",
        "decode",
        "decode",
        "decode_fill",
        "r1_done",
    ]
    last = t.steps[-1].snapshot
    assert last.request("L").status == "FINISHED_LENGTH_CAPPED"
    assert last.request("L").num_preemptions == 0
    assert all(r.num_preemptions == 0 for s in t.steps for r in s.snapshot.requests)
    assert scheduled(t, "L") == 17  # 16 prompt tokens and 1 generated, each once
    arrive = next(s for s in t.steps if s.narration_key == "arrive")
    assert arrive.snapshot.free_queue == (4, 5, 6)  # its first chunk (2 blocks) would fit
    assert arrive.focus is not None and arrive.focus.qualname == "KVCacheManager.allocate_slots"
    l_runs = next(s.snapshot for s in t.steps if s.narration_key == "l_runs")
    assert l_runs.request("L").block_ids == (5, 6)


def test_with_the_check_off_the_long_prompt_is_preempted_twice_and_recomputed() -> None:
    t = play("first-chunk")
    by_key = {step.narration_key: step for step in t.steps}
    assert by_key["arrive"].result == "scheduled R1: 1 token, L: 7 tokens"
    assert by_key["arrive"].snapshot.request("L").block_ids == (4, 5)
    assert by_key["s5"].snapshot.request("L").num_preemptions == 1
    assert by_key["s6"].snapshot.request("L").block_ids == (4, 5, 6)
    assert by_key["s6"].snapshot.free_queue == ()
    assert by_key["s7"].snapshot.request("L").num_preemptions == 2
    last = t.steps[-1].snapshot
    assert last.request("L").status == "FINISHED_LENGTH_CAPPED"
    assert (last.stats.preempted_hits, last.stats.preempted_queries) == (8, 32)
    assert scheduled(t, "L") == 27  # 10 more than with the check on
    # it finishes at the same step as with the check on
    assert len(t.steps) == len(play("default").steps)
    assert t.steps[-2].snapshot.request("L").status == "RUNNING"
