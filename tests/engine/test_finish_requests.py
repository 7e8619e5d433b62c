"""Requests leaving from outside: aborts and resets, as vLLM 0.33.0's Scheduler does.

Found by the differential check (tests/fidelity/vllm_differential.py, seeds 654 and
718): aborting two running requests in one call, vLLM freed their blocks in the
order of ``set(request_ids)``, not in the order given, so the free queue differed.
"""

from __future__ import annotations

import itertools

from engine.vllm.request import Request, RequestStatus
from engine.vllm.scheduler import Scheduler

BS = 2


def running(request_ids: tuple[str, str]) -> Scheduler:
    """Two running requests of one block each (blocks 1 and 2), nothing cached."""
    s = Scheduler(num_gpu_blocks=6, block_size=BS, enable_kv_cache_events=False)
    for index, request_id in enumerate(request_ids):
        s.add_request(
            Request(request_id, [index + 1], max_tokens=4, block_hasher=s.request_block_hasher)
        )
    s.schedule()
    return s


def free_queue(s: Scheduler) -> list[int]:
    pool = s.kv_cache_manager.block_pool
    return [block.block_id for block in pool.free_block_queue.get_all_free_blocks()]


def test_requests_aborted_together_free_their_blocks_in_set_order() -> None:
    # Two ids whose set order (this process's string hashing) differs from the
    # order given, so that the test fails if the given order is used.
    request_ids = next(
        (a, b)
        for a, b in itertools.permutations((f"req-{i}" for i in range(20)), 2)
        if list({a, b}) == [b, a]
    )
    s = running(request_ids)
    block_of = {rid: s.kv_cache_manager.get_block_ids(rid)[0][0] for rid in request_ids}
    s.finish_requests(list(request_ids), RequestStatus.FINISHED_ABORTED)
    # Unhashed blocks are prepended one request at a time: the request freed
    # last (the set's last id, here the first one given) ends up at the head.
    assert free_queue(s)[:2] == [block_of[request_ids[0]], block_of[request_ids[1]]]
    assert s.requests == {}


def test_finish_requests_accepts_one_id_or_none_for_all() -> None:
    s = running(("a", "b"))
    s.finish_requests("a", RequestStatus.FINISHED_ABORTED)
    assert list(s.requests) == ["b"]
    s.finish_requests(None, RequestStatus.FINISHED_ABORTED)
    assert s.requests == {} and not s.running


def test_finish_requests_returns_the_requests_it_finished() -> None:
    # As vLLM's: an unknown or already finished id is not in the list.
    s = running(("a", "b"))
    done = s.finish_requests(["a", "nobody"], RequestStatus.FINISHED_ABORTED)
    assert [r.request_id for r in done] == ["a"]
    assert done[0].status == RequestStatus.FINISHED_ABORTED
    assert s.finish_requests("a", RequestStatus.FINISHED_ABORTED) == []


def test_ids_preempted_by_a_reset_are_forgotten_once_the_next_step_is_scheduled() -> None:
    # vLLM 0.33.0 (scheduler.py, _preempt_request / _update_after_schedule): every
    # preempted id waits in reset_preempted_req_ids for the next SchedulerOutput,
    # and schedule() clears the set; the differential check compares that output.
    s = running(("a", "b"))
    assert s.reset_prefix_cache(reset_running_requests=True) is True
    assert s.reset_preempted_req_ids == {"a", "b"}
    s.schedule()
    assert s.reset_preempted_req_ids == set()
