"""Every state vLLM 0.33.0's real code printed (shared/vllm-reference/transcripts.txt),
replayed through our engine and compared exactly: queue order, ref counts, hashes,
the hash map, KV events, log lines and request states.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.vllm.block_pool import BlockPool
from engine.vllm.kv_cache_manager import KVCacheManager
from engine.vllm.kv_cache_utils import get_request_block_hasher
from engine.vllm.request import Request
from engine.vllm.scheduler import Scheduler
from tests.engine.readable import event_dicts, readable_hash, state

BS = 4
POOL_LOGGER = "vllm.v1.core.block_pool"
RESET_REFUSED = "Failed to reset prefix cache because some blocks (%d) are not freed yet"


def request(request_id: str, first: int, last: int) -> Request:
    return Request(
        request_id,
        range(first, last + 1),
        block_hasher=get_request_block_hasher(BS, readable_hash),
    )


def expect(pool: BlockPool, free: list[int], blocks: str, hash_map: dict[str, list[int]]) -> None:
    assert state(pool) == {
        "free": f"free(head->tail)={free} num_free={len(free)}",
        "blocks": f"blocks(ref/hash, non-trivial)={blocks}",
        "hash_map": hash_map,
    }


def stored(hashes: list[str], parent: str | None, tokens: list[int]) -> dict[str, object]:
    return {
        "type": "BlockStored",
        "block_hashes": hashes,
        "parent_block_hash": parent,
        "token_ids": tokens,
        "block_size": BS,
        "lora_id": None,
        "medium": "GPU",
        "group_idx": 0,
    }


def removed(block_hash: str) -> dict[str, object]:
    return {"type": "BlockRemoved", "block_hashes": [block_hash], "medium": "GPU", "group_idx": 0}


@pytest.fixture
def logs(vllm_logs: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    yield vllm_logs


def log_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, str]]:
    lines = [(r.levelname, r.name, r.getMessage()) for r in caplog.records]
    caplog.clear()
    return lines


B_MAP = {
    "1,2,3,4": [1],
    "101,102,103,104": [2],
    "101,102,103,104|105,106,107,108": [3],
    "101,102,103,104|105,106,107,108|109,110,111,112": [4],
}
B_BLOCKS_HELD = (
    "1(r0,1,2,3,4) 2(r1,101,102,103,104) 3(r1,101,102,103,104|105,106,107,108) "
    "4(r1,101,102,103,104|105,106,107,108|109,110,111,112)"
)
B_BLOCKS_FREED = B_BLOCKS_HELD.replace("(r1,", "(r0,")


def test_reset_pool(logs: pytest.LogCaptureFixture) -> None:
    # the reference's own constructor call
    pool = BlockPool(
        num_gpu_blocks=10,
        enable_caching=True,
        hash_block_size=4,
        enable_kv_cache_events=True,
        use_int_block_hashes=False,
    )
    expect(pool, [1, 2, 3, 4, 5, 6, 7, 8, 9], "", {})

    a = request("A", 1, 4)
    a_blocks = pool.get_new_blocks(1)
    assert [b.block_id for b in a_blocks] == [1]
    expect(pool, [2, 3, 4, 5, 6, 7, 8, 9], "1(r1)", {})

    pool.cache_full_blocks(a, a_blocks, 0, 1, BS)
    expect(pool, [2, 3, 4, 5, 6, 7, 8, 9], "1(r1,1,2,3,4)", {"1,2,3,4": [1]})
    assert event_dicts(pool.take_events()) == [stored(["1,2,3,4"], None, [1, 2, 3, 4])]

    pool.free_blocks(reversed(a_blocks))
    expect(pool, [2, 3, 4, 5, 6, 7, 8, 9, 1], "1(r0,1,2,3,4)", {"1,2,3,4": [1]})

    b = request("B", 101, 112)
    b_blocks = pool.get_new_blocks(3)
    assert [x.block_id for x in b_blocks] == [2, 3, 4]
    expect(pool, [5, 6, 7, 8, 9, 1], "1(r0,1,2,3,4) 2(r1) 3(r1) 4(r1)", {"1,2,3,4": [1]})

    pool.cache_full_blocks(b, b_blocks, 0, 3, BS)
    expect(pool, [5, 6, 7, 8, 9, 1], B_BLOCKS_HELD, B_MAP)
    assert event_dicts(pool.take_events()) == [
        stored(
            [
                "101,102,103,104",
                "101,102,103,104|105,106,107,108",
                "101,102,103,104|105,106,107,108|109,110,111,112",
            ],
            None,
            list(range(101, 113)),
        )
    ]

    # (a) the default reset is refused while B holds 3 blocks, and changes nothing
    assert pool.reset_prefix_cache() is False
    expect(pool, [5, 6, 7, 8, 9, 1], B_BLOCKS_HELD, B_MAP)
    assert pool.take_events() == []
    assert log_lines(logs) == [("WARNING", POOL_LOGGER, RESET_REFUSED % 3)]

    # (b) what preemption or finishing does: free in reverse, hashed blocks to the tail
    pool.free_blocks(reversed(b_blocks))
    expect(pool, [5, 6, 7, 8, 9, 1, 4, 3, 2], B_BLOCKS_FREED, B_MAP)

    assert pool.reset_prefix_cache() is True
    expect(pool, [5, 6, 7, 8, 9, 1, 4, 3, 2], "", {})
    assert event_dicts(pool.take_events()) == [{"type": "AllBlocksCleared"}]
    assert log_lines(logs) == [("INFO", POOL_LOGGER, "Successfully reset prefix cache")]

    # an already empty cache resets again, with the event again
    assert pool.reset_prefix_cache() is True
    expect(pool, [5, 6, 7, 8, 9, 1, 4, 3, 2], "", {})
    assert event_dicts(pool.take_events()) == [{"type": "AllBlocksCleared"}]
    assert log_lines(logs) == [("INFO", POOL_LOGGER, "Successfully reset prefix cache")]

    # the reset did not reorder the queue
    assert [x.block_id for x in pool.get_new_blocks(2)] == [5, 6]
    expect(pool, [7, 8, 9, 1, 4, 3, 2], "5(r1) 6(r1)", {})


def test_eviction_order() -> None:
    pool = BlockPool(10, True, BS, enable_kv_cache_events=True, use_int_block_hashes=False)
    r1 = request("R1", 1, 10)  # two full blocks and a partial third
    r1_blocks = pool.get_new_blocks(3)
    pool.cache_full_blocks(r1, r1_blocks, 0, 2, BS)
    r1_map = {"1,2,3,4": [1], "1,2,3,4|5,6,7,8": [2]}
    expect(pool, [4, 5, 6, 7, 8, 9], "1(r1,1,2,3,4) 2(r1,1,2,3,4|5,6,7,8) 3(r1)", r1_map)
    assert event_dicts(pool.take_events()) == [
        stored(["1,2,3,4", "1,2,3,4|5,6,7,8"], None, [1, 2, 3, 4, 5, 6, 7, 8])
    ]

    r2_blocks = pool.get_new_blocks(2)
    assert [b.block_id for b in r2_blocks] == [4, 5]

    r3 = request("R3", 201, 208)
    r3_blocks = pool.get_new_blocks(2)
    pool.cache_full_blocks(r3, r3_blocks, 0, 2, BS)
    full_map = {**r1_map, "201,202,203,204": [6], "201,202,203,204|205,206,207,208": [7]}
    r3_shown = "6(r1,201,202,203,204) 7(r1,201,202,203,204|205,206,207,208)"
    expect(
        pool,
        [8, 9],
        f"1(r1,1,2,3,4) 2(r1,1,2,3,4|5,6,7,8) 3(r1) 4(r1) 5(r1) {r3_shown}",
        full_map,
    )
    pool.take_events()

    # unhashed tail block -> HEAD (prepend); hashed -> TAIL
    pool.free_blocks(reversed(r1_blocks))
    r1_free = "1(r0,1,2,3,4) 2(r0,1,2,3,4|5,6,7,8)"
    expect(pool, [3, 8, 9, 2, 1], f"{r1_free} 4(r1) 5(r1) {r3_shown}", full_map)
    # all unhashed -> prepended to HEAD in the given order
    pool.free_blocks(reversed(r2_blocks))
    expect(pool, [5, 4, 3, 8, 9, 2, 1], f"{r1_free} {r3_shown}", full_map)
    # all hashed -> appended to TAIL
    pool.free_blocks(reversed(r3_blocks))
    r3_free = r3_shown.replace("(r1,", "(r0,")
    expect(pool, [5, 4, 3, 8, 9, 2, 1, 7, 6], f"{r1_free} {r3_free}", full_map)

    r4 = request("R4", 1, 4)
    hit = pool.get_cached_block(r4.block_hashes[0], [0])
    assert hit is not None and [b.block_id for b in hit] == [1]
    pool.touch(hit)  # ref 0 -> 1, out of the middle of the queue
    rest_free = "2(r0,1,2,3,4|5,6,7,8) " + r3_free
    expect(pool, [5, 4, 3, 8, 9, 2, 7, 6], f"1(r1,1,2,3,4) {rest_free}", full_map)
    pool.touch(hit)  # ref 1 -> 2
    expect(pool, [5, 4, 3, 8, 9, 2, 7, 6], f"1(r2,1,2,3,4) {rest_free}", full_map)
    pool.free_blocks(hit)  # ref 2 -> 1: stays out of the queue
    expect(pool, [5, 4, 3, 8, 9, 2, 7, 6], f"1(r1,1,2,3,4) {rest_free}", full_map)

    with pytest.raises(ValueError, match=r"^Cannot get 99 free blocks from the pool$"):
        pool.get_new_blocks(99)
    expect(pool, [5, 4, 3, 8, 9, 2, 7, 6], f"1(r1,1,2,3,4) {rest_free}", full_map)

    # one block at a time, from the head; cached blocks lose their hash on the way out
    taken = [pool.get_new_blocks(1)[0].block_id for _ in range(5)]
    assert taken == [5, 4, 3, 8, 9]
    assert pool.take_events() == []
    expect(
        pool,
        [2, 7, 6],
        f"1(r1,1,2,3,4) 2(r0,1,2,3,4|5,6,7,8) 3(r1) 4(r1) 5(r1) {r3_free} 8(r1) 9(r1)",
        full_map,
    )

    assert pool.get_new_blocks(1)[0].block_id == 2
    map_after_2 = {k: v for k, v in full_map.items() if k != "1,2,3,4|5,6,7,8"}
    expect(
        pool, [7, 6], f"1(r1,1,2,3,4) 2(r1) 3(r1) 4(r1) 5(r1) {r3_free} 8(r1) 9(r1)", map_after_2
    )
    assert event_dicts(pool.take_events()) == [removed("1,2,3,4|5,6,7,8")]

    assert pool.get_new_blocks(1)[0].block_id == 7
    expect(
        pool,
        [6],
        "1(r1,1,2,3,4) 2(r1) 3(r1) 4(r1) 5(r1) 6(r0,201,202,203,204) 7(r1) 8(r1) 9(r1)",
        {"1,2,3,4": [1], "201,202,203,204": [6]},
    )
    assert event_dicts(pool.take_events()) == [removed("201,202,203,204|205,206,207,208")]

    assert pool.get_new_blocks(1)[0].block_id == 6
    all_held = "2(r1) 3(r1) 4(r1) 5(r1) 6(r1) 7(r1) 8(r1) 9(r1)"
    expect(pool, [], f"1(r1,1,2,3,4) {all_held}", {"1,2,3,4": [1]})
    assert event_dicts(pool.take_events()) == [removed("201,202,203,204")]

    pool.free_blocks(hit)  # R4's hashed block -> TAIL
    expect(pool, [1], f"1(r0,1,2,3,4) {all_held}", {"1,2,3,4": [1]})

    assert pool.touch([pool.null_block]) is None
    assert pool.free_blocks([pool.null_block]) is None
    expect(pool, [1], f"1(r0,1,2,3,4) {all_held}", {"1,2,3,4": [1]})


P1_MAP = {"1,2,3,4": [1], "1,2,3,4|5,6,7,8": [2], "1,2,3,4|5,6,7,8|9,10,11,12": [3]}
P1_FREED = "1(r0,1,2,3,4) 2(r0,1,2,3,4|5,6,7,8) 3(r0,1,2,3,4|5,6,7,8|9,10,11,12)"
P1_STORED = stored(
    ["1,2,3,4", "1,2,3,4|5,6,7,8", "1,2,3,4|5,6,7,8|9,10,11,12"], None, list(range(1, 13))
)


def test_dup_cap_pool() -> None:
    manager = KVCacheManager(10, BS, use_int_block_hashes=False)
    pool = manager.block_pool
    p1 = request("P1", 1, 12)
    blocks = pool.get_new_blocks(3)
    pool.cache_full_blocks(p1, blocks, 0, 3, BS)
    pool.free_blocks(reversed(blocks))
    expect(pool, [4, 5, 6, 7, 8, 9, 3, 2, 1], P1_FREED, P1_MAP)
    assert event_dicts(pool.take_events()) == [P1_STORED]

    # a 12-token prompt may hit at most 11 tokens: 2 whole blocks
    hit = manager.find_longest_cache_hit(p1.block_hashes, p1.num_tokens - 1)
    assert [b.block_id for b in hit] == [1, 2]
    # one token more and all three hit
    p13 = request("P13", 1, 13)
    hit = manager.find_longest_cache_hit(p13.block_hashes, p13.num_tokens - 1)
    assert [b.block_id for b in hit] == [1, 2, 3]
    assert len(p13.block_hashes) == 3
    expect(pool, [4, 5, 6, 7, 8, 9, 3, 2, 1], P1_FREED, P1_MAP)


def admit(manager: KVCacheManager, req: Request) -> tuple[list[int], int, list[int]]:
    """get_computed_blocks + allocate_slots for a whole prompt, as the scheduler does."""
    computed, num_computed = manager.get_computed_blocks(req)
    new = manager.allocate_slots(req, req.num_tokens - num_computed, num_computed, computed)
    assert new is not None
    return computed.get_block_ids()[0], num_computed, new.get_block_ids()[0]


def test_reset_manager(logs: pytest.LogCaptureFixture) -> None:
    manager = KVCacheManager(10, BS, use_int_block_hashes=False)
    pool = manager.block_pool
    a = request("A", 1, 4)
    assert admit(manager, a) == ([], 0, [1])
    assert manager.get_block_ids("A") == ([1],)
    expect(pool, [2, 3, 4, 5, 6, 7, 8, 9], "1(r1,1,2,3,4)", {"1,2,3,4": [1]})
    assert event_dicts(pool.take_events()) == [stored(["1,2,3,4"], None, [1, 2, 3, 4])]

    manager.free(a)
    expect(pool, [2, 3, 4, 5, 6, 7, 8, 9, 1], "1(r0,1,2,3,4)", {"1,2,3,4": [1]})

    b = request("B", 101, 112)
    assert admit(manager, b) == ([], 0, [2, 3, 4])
    expect(pool, [5, 6, 7, 8, 9, 1], B_BLOCKS_HELD, B_MAP)
    pool.take_events()

    assert manager.reset_prefix_cache() is False
    assert manager.prefix_cache_stats is not None and manager.prefix_cache_stats.reset is False
    expect(pool, [5, 6, 7, 8, 9, 1], B_BLOCKS_HELD, B_MAP)
    assert log_lines(logs) == [("WARNING", POOL_LOGGER, RESET_REFUSED % 3)]

    manager.free(b)
    expect(pool, [5, 6, 7, 8, 9, 1, 4, 3, 2], B_BLOCKS_FREED, B_MAP)

    assert manager.reset_prefix_cache() is True
    stats = manager.make_prefix_cache_stats()
    assert stats is not None
    assert (stats.reset, stats.requests, stats.queries, stats.hits, stats.preempted_requests) == (
        True,
        0,
        0,
        0,
        0,
    )
    expect(pool, [5, 6, 7, 8, 9, 1, 4, 3, 2], "", {})
    assert event_dicts(pool.take_events()) == [{"type": "AllBlocksCleared"}]
    assert log_lines(logs) == [("INFO", POOL_LOGGER, "Successfully reset prefix cache")]


def test_dup_cap_manager() -> None:
    manager = KVCacheManager(10, BS, use_int_block_hashes=False)
    pool = manager.block_pool
    p1 = request("P1", 1, 12)
    assert admit(manager, p1) == ([], 0, [1, 2, 3])
    assert event_dicts(pool.take_events()) == [P1_STORED]
    manager.free(p1)
    expect(pool, [4, 5, 6, 7, 8, 9, 3, 2, 1], P1_FREED, P1_MAP)

    # an identical prompt hits k - 1 blocks; the last one is recomputed into a new
    # block and cached under the same key: two blocks under one hash
    q = request("Q", 1, 12)
    assert admit(manager, q) == ([1, 2], 8, [4])
    assert manager.get_block_ids("Q") == ([1, 2, 4],)
    last = "1,2,3,4|5,6,7,8|9,10,11,12"
    dup_map = {**P1_MAP, last: [3, 4]}
    expect(
        pool,
        [5, 6, 7, 8, 9, 3],
        f"1(r1,1,2,3,4) 2(r1,1,2,3,4|5,6,7,8) 3(r0,{last}) 4(r1,{last})",
        dup_map,
    )
    assert event_dicts(pool.take_events()) == [stored([last], "1,2,3,4|5,6,7,8", [9, 10, 11, 12])]

    manager.free(q)
    expect(pool, [5, 6, 7, 8, 9, 3, 4, 2, 1], f"{P1_FREED} 4(r0,{last})", dup_map)

    # one token more: all k blocks hit (the first block inserted under the key)
    q2 = request("Q2", 1, 13)
    assert admit(manager, q2) == ([1, 2, 3], 12, [5])
    assert manager.get_block_ids("Q2") == ([1, 2, 3, 5],)
    expect(
        pool,
        [6, 7, 8, 9, 4],
        f"1(r1,1,2,3,4) 2(r1,1,2,3,4|5,6,7,8) 3(r1,{last}) 4(r0,{last}) 5(r1)",
        dup_map,
    )
    stats = manager.make_prefix_cache_stats()
    assert stats is not None and (stats.requests, stats.queries, stats.hits) == (0, 0, 0)


def scheduler_state(s: Scheduler) -> dict[str, object]:
    reqs = sorted(s.requests)
    return {
        "running": [r.request_id for r in s.running],
        "waiting": [r.request_id for r in s.waiting],
        "status": {r: s.requests[r].status.name for r in reqs},
        "num_computed_tokens": {r: s.requests[r].num_computed_tokens for r in reqs},
        "num_preemptions": {r: s.requests[r].num_preemptions for r in reqs},
        "req_block_ids": {r: s.kv_cache_manager.get_block_ids(r)[0] for r in reqs},
    }


def test_reset_scheduler(logs: pytest.LogCaptureFixture) -> None:
    s = Scheduler(
        10,
        BS,
        max_num_batched_tokens=64,
        hash_function=readable_hash,
        use_int_block_hashes=False,
    )
    pool = s.kv_cache_manager.block_pool
    for rid, first, last in (("A", 1, 4), ("B", 101, 109), ("C", 301, 306)):
        s.add_request(Request(rid, range(first, last + 1), block_hasher=s.request_block_hasher))
    assert s.schedule().num_scheduled_tokens == {"A": 4, "B": 9, "C": 6}
    busy_blocks = (
        "1(r1,1,2,3,4) 2(r1,101,102,103,104) 3(r1,101,102,103,104|105,106,107,108) "
        "4(r1) 5(r1,301,302,303,304) 6(r1)"
    )
    busy_map = {
        "1,2,3,4": [1],
        "101,102,103,104": [2],
        "101,102,103,104|105,106,107,108": [3],
        "301,302,303,304": [5],
    }
    busy = {
        "running": ["A", "B", "C"],
        "waiting": [],
        "status": {"A": "RUNNING", "B": "RUNNING", "C": "RUNNING"},
        "num_computed_tokens": {"A": 4, "B": 9, "C": 6},
        "num_preemptions": {"A": 0, "B": 0, "C": 0},
        "req_block_ids": {"A": [1], "B": [2, 3, 4], "C": [5, 6]},
    }
    expect(pool, [7, 8, 9], busy_blocks, busy_map)
    assert scheduler_state(s) == busy

    assert s.reset_prefix_cache() is False
    expect(pool, [7, 8, 9], busy_blocks, busy_map)
    assert scheduler_state(s) == busy
    assert log_lines(logs) == [("WARNING", POOL_LOGGER, RESET_REFUSED % 6)]

    assert s.reset_prefix_cache(reset_running_requests=True) is True
    assert sorted(s.reset_preempted_req_ids) == ["A", "B", "C"]
    expect(pool, [4, 6, 7, 8, 9, 5, 3, 2, 1], "", {})
    assert scheduler_state(s) == {
        "running": [],
        "waiting": ["A", "B", "C"],
        "status": {"A": "PREEMPTED", "B": "PREEMPTED", "C": "PREEMPTED"},
        "num_computed_tokens": {"A": 0, "B": 0, "C": 0},
        "num_preemptions": {"A": 1, "B": 1, "C": 1},
        "req_block_ids": {"A": [], "B": [], "C": []},
    }
    assert log_lines(logs) == [("INFO", POOL_LOGGER, "Successfully reset prefix cache")]

    # re-admitted in the original FIFO order, with no cache hits
    assert s.schedule().num_scheduled_tokens == {"A": 4, "B": 9, "C": 6}
    expect(
        pool,
        [3, 2, 1],
        "4(r1,1,2,3,4) 5(r1) 6(r1,101,102,103,104) 7(r1,101,102,103,104|105,106,107,108) "
        "8(r1) 9(r1,301,302,303,304)",
        {
            "1,2,3,4": [4],
            "101,102,103,104": [6],
            "101,102,103,104|105,106,107,108": [7],
            "301,302,303,304": [9],
        },
    )
    assert scheduler_state(s) == {
        **busy,
        "num_preemptions": {"A": 1, "B": 1, "C": 1},
        "req_block_ids": {"A": [4], "B": [6, 7, 8], "C": [9, 5]},
    }
