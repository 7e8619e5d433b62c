"""The minimal scheduler over our SGLang model: slot conservation, locks, lpm vs fcfs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.sglang.allocator import make_allocator
from engine.sglang.radix_cache import RadixCache, RadixKey
from engine.sglang.schedule_policy import SchedulePolicy, fits_an_empty_pool
from engine.sglang.scheduler import Req, Scheduler


def slot_census(scheduler: Scheduler) -> None:
    """free + in tree + held only by running requests == pool size (counted in pages)."""
    ps = scheduler.page_size
    tree_pages = {s // ps for n in scheduler.tree_cache.all_nodes() for s in n.value or []}
    free_pages = {s // ps for s in scheduler.allocator.all_free_slots()}
    held_pages = {s // ps for r in scheduler.running for s in r.kv_row[r.cache_protected_len :]}
    assert not (tree_pages & free_pages) and not (held_pages & free_pages)
    assert not (tree_pages & held_pages)
    pool_pages = scheduler.allocator.size // ps
    assert len(tree_pages) + len(free_pages) + len(held_pages) == pool_pages
    tree = scheduler.tree_cache
    assert tree.protected_size() == sum(len(n.key) for n in tree.all_nodes() if n.lock_ref > 0)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([1, 16]),
    st.sampled_from(["lpm", "fcfs"]),
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(1, 40), st.integers(1, 6)),
        min_size=1,
        max_size=12,
    ),
)
def test_slots_are_conserved_and_locks_released(
    page_size: int, policy: str, reqs: list[tuple[int, int, int]]
) -> None:
    allocator = make_allocator(512, page_size)
    tree = RadixCache(allocator, page_size=page_size)
    scheduler = Scheduler(allocator, tree, policy)
    prefixes = [list(range(100, 140)), list(range(200, 220)), []]
    for i, (p, n, max_new) in enumerate(reqs):
        scheduler.add_request(Req(f"r{i}", prefixes[p] + [i] * n, max_new))
    for _ in range(200):
        if not scheduler.waiting_queue and not scheduler.running:
            break
        scheduler.step()
        slot_census(scheduler)
    assert not scheduler.running and not scheduler.waiting_queue
    assert tree.protected_size() == 0
    assert all(n.lock_ref == 0 for n in tree.all_nodes())


def _order(policy: str) -> list[str]:
    allocator = make_allocator(1024)
    tree = RadixCache(allocator)
    scheduler = Scheduler(allocator, tree, policy)
    shared = list(range(100))
    scheduler.add_request(Req("warm", [*shared, 1], 1))
    scheduler.run()
    # two requests sharing a fresh 40-token prefix, then one reusing the cache
    fresh = list(range(500, 540))
    scheduler.add_request(Req("a", [*fresh, 1], 1))
    scheduler.add_request(Req("b", [*fresh, 2], 1))
    scheduler.add_request(Req("c", [*shared, 3], 1))
    scheduler.policy.calc_priority(scheduler.waiting_queue)  # type: ignore[arg-type]
    return [r.rid for r in scheduler.waiting_queue]


def test_lpm_puts_the_longest_cached_prefix_first_and_defers_in_batch_duplicates() -> None:
    # "c" reuses 100 cached tokens; "b" shares 40 (>= 32) tokens with "a" ahead of it
    # and has only a short cached match, so it waits for "a" to cache the prefix.
    assert _order("lpm") == ["c", "a", "b"]


def test_fcfs_keeps_arrival_order() -> None:
    assert _order("fcfs") == ["a", "b", "c"]


def test_a_prefilled_request_is_matched_while_it_still_runs() -> None:
    # batch_result_processor.py:393-394: after its prefill a running request
    # checkpoints its prompt, so the next step's request reuses it to the token.
    allocator = make_allocator(1024)
    tree = RadixCache(allocator)
    scheduler = Scheduler(allocator, tree)
    shared = list(range(100, 137))  # 37 tokens: no block boundary
    scheduler.add_request(first := Req("first", [*shared, 1], 10))
    scheduler.step()
    assert scheduler.running and tree.protected_size() == len(shared) + 1
    scheduler.add_request(second := Req("second", [*shared, 2], 10))
    scheduler.step()
    # matched at admission to the token: its row starts with the first's slots
    assert second.kv_row[: len(shared)] == first.kv_row[: len(shared)]
    assert second.kv_row[len(shared)] != first.kv_row[len(shared)]
    scheduler.run()
    slot_census(scheduler)


def test_the_prefill_budget_admits_the_first_request_and_stops_at_the_rest() -> None:
    # schedule_policy.py:1629-1633: the first request goes in even above the input
    # budget; a later one only while its extend is below what is left.
    allocator = make_allocator(4096)
    scheduler = Scheduler(allocator, RadixCache(allocator), max_prefill_tokens=100)
    scheduler.add_request(Req("big", list(range(1000, 1150)), 1))
    scheduler.add_request(Req("small", [1, 2, 3], 1))
    assert [r.rid for r in scheduler.schedule()] == ["big"]
    scheduler = Scheduler(allocator := make_allocator(4096), RadixCache(allocator), "fcfs", 100)
    for i in range(3):
        scheduler.add_request(Req(f"r{i}", [i] * 40, 1))
    # 40 + 40 leaves 20: the third's 40 tokens are not below it
    assert [r.rid for r in scheduler.schedule()] == ["r0", "r1"]


# -- admission's boundary: extend + max_new + page_size strictly below what is left ----------
# schedule_policy.py:1405-1412 (total_tokens, with per_req_token_overhead = page_size),
# prefill_budget.py:114-130 (total_tokens < remaining_total) and :156-168 (reserve: the
# page-ceiled extend, a page and the clipped max_new_tokens).


def _admitted(page_size: int, size: int, reqs: list[Req]) -> list[str]:
    allocator = make_allocator(size, page_size)
    scheduler = Scheduler(allocator, RadixCache(allocator, page_size=page_size))
    for req in reqs:
        scheduler.add_request(req)
    return [r.rid for r in scheduler.schedule()]


def test_a_lone_request_is_admitted_only_strictly_below_the_pool_at_page_size_1() -> None:
    # an empty pool of 20: 10 prompt + 8 output + 1 page = 19 < 20 fits; with 9 output,
    # 20 < 20 does not (and nothing else could ever make room)
    assert _admitted(1, 20, [Req("A", list(range(1, 11)), 8)]) == ["A"]
    assert _admitted(1, 20, [Req("A", list(range(1, 11)), 9)]) == []


def test_the_second_request_of_a_batch_sees_the_first_ones_page_at_page_size_1() -> None:
    # pool 40. A: 10 + 5 + 1 = 16 < 40; reserve takes 10 + 1 + 5 = 16, 24 left.
    # B: 10 + 12 + 1 = 23 < 24 fits; 10 + 13 + 1 = 24 < 24 does not.
    a = Req("A", list(range(1, 11)), 5)
    assert _admitted(1, 40, [a, Req("B", list(range(11, 21)), 12)]) == ["A", "B"]
    a = Req("A", list(range(1, 11)), 5)
    assert _admitted(1, 40, [a, Req("B", list(range(11, 21)), 13)]) == ["A"]


def test_the_second_request_of_a_batch_at_page_size_4() -> None:
    # pool 32. A: 5 + 3 + 4 = 12 < 32; reserve takes ceil(5) = 8, a page 4 and 3: 15,
    # 17 left. B: 5 + 7 + 4 = 16 < 17 fits; 5 + 8 + 4 = 17 < 17 does not.
    a = Req("A", [1, 2, 3, 4, 5], 3)
    assert _admitted(4, 32, [a, Req("B", [6, 7, 8, 9, 10], 7)]) == ["A", "B"]
    a = Req("A", [1, 2, 3, 4, 5], 3)
    assert _admitted(4, 32, [a, Req("B", [6, 7, 8, 9, 10], 8)]) == ["A"]


def _after_r0(r1_max_new: int) -> tuple[Scheduler, Req]:
    allocator = make_allocator(80, 4)
    scheduler = Scheduler(allocator, RadixCache(allocator, page_size=4))
    scheduler.add_request(Req("R0", [1, 2, 3, 4, 5], 40))
    scheduler.step()
    scheduler.add_request(r1 := Req("R1", [6, 7, 8], r1_max_new))
    return scheduler, r1


def test_a_running_requests_output_counts_times_new_token_ratio_at_page_size_4() -> None:
    # R0 (5 tokens, 40 out) ran a step: its row holds 2 pages (8 slots), its first page is
    # in the tree and locked, so 80 - 8 = 72 are free and nothing is evictable. Its
    # remaining 39 outputs count 39 x 0.7 = 27.3 (schedule_policy.py:785-794; the ratio
    # starts at 0.7 and decays only on a decode step). 72 - 27.3 = 44.7 are left.
    # R1: 3 + 37 + 4 = 44 < 44.7 fits; 3 + 38 + 4 = 45 does not.
    scheduler, r1 = _after_r0(37)
    assert scheduler.new_token_ratio_tracker.current == 0.7
    assert scheduler.schedule() == [r1]
    scheduler, r1 = _after_r0(38)
    assert scheduler.schedule() == []
    # NO_TOKEN with a request running: admission is shut until one leaves (batch_is_full)
    assert scheduler.batch_is_full


def test_new_token_ratio_decays_per_decode_step_and_resets_when_idle() -> None:
    # new_token_ratio_tracker.py:19-36 with default args: 0.7, floor 0.098, step 0.602 / 600
    allocator = make_allocator(64)
    scheduler = Scheduler(allocator, RadixCache(allocator))
    tracker = scheduler.new_token_ratio_tracker
    assert (tracker.init, tracker.min) == (0.7, 0.7 * 0.14)
    scheduler.add_request(Req("A", [1, 2, 3], 4))
    scheduler.step()  # prefill: nothing decodes
    assert tracker.current == 0.7
    scheduler.run()  # three decode steps
    assert abs(tracker.current - (0.7 - 3 * (0.7 - 0.098) / 600)) < 1e-12
    scheduler.step()  # idle
    assert tracker.current == 0.7


def test_a_decode_short_of_slots_retracts_the_request_with_the_fewest_outputs() -> None:
    # page size 1, pool 100. R0 (2 tokens, 60 out) runs; R1 (2 tokens, 53 out) arrives a step
    # later: 98 free less 59 x 0.7 = 41.3 leaves 56.7, and 2 + 53 + 1 = 56 fits. Both then
    # grow a slot a step and the pool runs out before R1 is done.
    allocator = make_allocator(100)
    tree = RadixCache(allocator)
    scheduler = Scheduler(allocator, tree)
    scheduler.add_request(r0 := Req("R0", [1, 2], 60))
    scheduler.step()
    scheduler.add_request(r1 := Req("R1", [3, 4], 53))
    retracted_at = None
    for _ in range(200):
        if not scheduler.waiting_queue and not scheduler.running:
            break
        outputs = len(r1.output_ids)
        scheduler.step()
        slot_census(scheduler)
        if retracted_at is None and r1.retraction_count:
            retracted_at = outputs
            # schedule_batch.py:3544-3580: the fewest outputs goes first; R1 is back at the
            # end of the queue with its outputs, its row freed and its match forgotten
            assert scheduler.waiting_queue == [r1] and scheduler.running == [r0]
            assert len(r1.output_ids) == outputs and r1.kv_row == [] and r1.lock is None
            assert r1.prefix_len == 0 and r1.last_node is None
            # new_token_ratio_tracker.py:38-48 over R0: (outputs + 20) / (60 + 1), at most 1
            expected = min(1.0, (len(r0.output_ids) - 1 + 20) / 61)
            assert scheduler.new_token_ratio_tracker.current == expected
            # its decoded tokens were not cached: the tree holds only the two prompts
            assert tree.total_size() == 4
    assert retracted_at is not None and r1.retraction_count == 1
    assert len(r0.output_ids) == 60 and len(r1.output_ids) == 53
    assert tree.protected_size() == 0


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([1, 4]),
    st.sampled_from(["lpm", "fcfs"]),
    st.integers(40, 120),
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(1, 12), st.integers(1, 40), st.integers(0, 3)),
        min_size=1,
        max_size=8,
    ),
)
def test_retractions_keep_slots_and_locks_in_order(
    page_size: int, policy: str, size: int, reqs: list[tuple[int, int, int, int]]
) -> None:
    allocator = make_allocator(size // page_size * page_size, page_size)
    tree = RadixCache(allocator, page_size=page_size)
    scheduler = Scheduler(allocator, tree, policy)
    prefixes = [list(range(100, 108)), list(range(200, 204)), []]
    pending = [
        (delay, Req(f"r{i}", prefixes[p] + [i] * n, max_new))
        for i, (p, n, max_new, delay) in enumerate(reqs)
        # one that never fits would wait for ever (fcfs: and everything behind it)
        if fits_an_empty_pool(len(prefixes[p]) + n, max_new, page_size, allocator.size)
    ]
    for step in range(2000):
        for delay, req in pending:
            if delay == step:
                scheduler.add_request(req)
        if step > 3 and not scheduler.waiting_queue and not scheduler.running:
            break
        scheduler.step()
        slot_census(scheduler)
    assert not scheduler.running and not scheduler.waiting_queue
    assert all(len(r.output_ids) == r.max_new_tokens or r.to_finish for _, r in pending)
    assert tree.protected_size() == 0
    assert all(n.lock_ref == 0 for n in tree.all_nodes())


# -- one step = one iteration of event_loop_normal: a prefill batch or a decode batch ----------
# managers/scheduler.py:3992-4004 ("Run prefill first if possible", else update_running_batch)


def _scheduler(size: int, page_size: int = 1) -> Scheduler:
    allocator = make_allocator(size, page_size)
    return Scheduler(allocator, RadixCache(allocator, page_size=page_size))


def test_a_step_that_admits_a_batch_decodes_nobody_and_the_next_decodes_them_all() -> None:
    scheduler = _scheduler(200)
    tracker = scheduler.new_token_ratio_tracker
    scheduler.add_request(r0 := Req("R0", [1, 2, 3], 6))
    scheduler.step()  # R0's prefill: its first token
    scheduler.step()  # nothing admitted: R0 decodes
    assert len(r0.output_ids) == 2 and tracker.current < 0.7
    ratio, row = tracker.current, list(r0.kv_row)
    scheduler.add_request(r1 := Req("R1", [7, 8, 9, 10], 6))
    free = scheduler.allocator.available_size()
    scheduler.step()  # R1 is admitted: a prefill batch of R1 alone
    assert len(r1.output_ids) == 1 and len(r0.output_ids) == 2 and r0.kv_row == row
    assert free - scheduler.allocator.available_size() == len(r1.origin_input_ids)
    assert tracker.current == ratio  # no decode, no decay
    assert scheduler.running == [r0, r1]  # merged behind the running batch
    scheduler.step()  # nothing waits: the merged batch decodes, one token each
    assert (len(r0.output_ids), len(r1.output_ids)) == (3, 2) and tracker.current < ratio


def test_a_request_with_one_output_token_finishes_at_its_prefill() -> None:
    # batch_result_processor.py:365-390: the token sampled at the prefill finishes it, and
    # release_kv_cache caches its prompt and unlocks it in the same step
    scheduler = _scheduler(100)
    scheduler.add_request(req := Req("A", [1, 2, 3, 4], 1))
    assert scheduler.step() == [req]
    assert not scheduler.running and scheduler.finished == [req] and len(req.output_ids) == 1
    tree = scheduler.tree_cache
    assert tree.total_size() == 4 and tree.protected_size() == 0 and req.lock is None
    assert scheduler.step() == [] and scheduler.new_token_ratio_tracker.current == 0.7


def test_a_prefill_batch_releases_and_checkpoints_each_request_in_batch_order() -> None:
    # the loop of batch_result_processor.py:307-394 handles one request at a time: A, done,
    # is cached before B checkpoints, so A's node is built first
    scheduler = _scheduler(100)
    scheduler.add_request(Req("A", [1, 2, 3], 1))
    scheduler.add_request(b := Req("B", [7, 8, 9], 5))
    scheduler.step()
    root = scheduler.tree_cache.root_node
    a_node = next(n for n in root.children.values() if n.key.token_ids[0] == 1)
    b_node = next(n for n in root.children.values() if n.key.token_ids[0] == 7)
    assert a_node.creation_time < b_node.creation_time and b.last_node is b_node


def test_a_request_just_prefilled_is_retracted_at_the_next_decode() -> None:
    # Four requests run to their last token while new_token_ratio decays (0.7 - 458 x
    # 0.602 / 600 = 0.2405). R1 then needs 9 + 2 + 1 = 12 slots, below the 13 free less
    # 4 remaining outputs x 0.2405: admitted, it leaves 4 free. The next step decodes the
    # merged batch, which needs 5: retract_decode takes the fewest outputs, R1's one.
    m = 460
    scheduler = _scheduler(4 * m + 9)
    running = [Req(f"A{i}", [i + 1], m) for i in range(4)]
    for req in running:
        scheduler.add_request(req)
    while len(running[0].output_ids) < m - 1:
        scheduler.step()
    scheduler.add_request(r1 := Req("R1", list(range(100, 109)), 2))
    assert scheduler.step() == [] and len(r1.output_ids) == 1  # its prefill
    assert scheduler.allocator.available_size() == 4 and len(scheduler.running) == 5
    assert scheduler.step() == running  # the rest decode their last token
    assert r1.retraction_count == 1 and scheduler.waiting_queue == [r1] and r1.kv_row == []
    scheduler.run()
    assert len(r1.output_ids) == 2


def test_batch_is_full_set_with_nothing_running_lasts_one_step() -> None:
    # pool 40. A (10 + 10 + 1 = 21) is admitted with nothing running; B (5 + 13 + 1 = 19)
    # is not below the 19 left: NO_TOKEN. SGLang sets batch_is_full on the empty running
    # batch, which the next iteration replaces by A's prefill batch (scheduler.py:3956-
    # 3958), so admission is tried again: 40 - 10 free less A's 9 outputs x 0.7 leaves
    # 23.7, and B fits. A sits out B's prefill.
    scheduler = _scheduler(40)
    scheduler.add_request(a := Req("A", list(range(1, 11)), 10))
    scheduler.add_request(b := Req("B", [21, 22, 23, 24, 25], 13))
    scheduler.step()
    assert scheduler.running == [a] and not scheduler.batch_is_full
    scheduler.step()
    assert scheduler.running == [a, b] and len(a.output_ids) == 1 and len(b.output_ids) == 1
    # with a request running, NO_TOKEN keeps admission shut until one leaves
    scheduler.add_request(Req("C", [31, 32], 30))
    scheduler.step()
    assert scheduler.batch_is_full and len(a.output_ids) == 2


# -- found by tests/fidelity/sglang_scheduler_differential.py against SGLang 0.5.23 ----------


def test_a_finished_request_leaves_its_prompt_and_its_outputs_as_two_nodes() -> None:
    # radix_cache.py:486-501 (_insert_cache, split_prompt): the release inserts the
    # prompt's key again with priority + 1, which splits the leaf where the prompt ends,
    # so evicting the outputs' tokens keeps the prompt cached.
    scheduler = _scheduler(100)
    scheduler.add_request(Req("A", [1, 2, 3, 4], 4))
    scheduler.run()
    tree = scheduler.tree_cache
    [prompt] = tree.root_node.children.values()
    [outputs] = prompt.children.values()
    assert list(prompt.key) == [1, 2, 3, 4] and prompt.priority == 1
    assert len(outputs.key) == 3 and outputs.priority == 0  # all but the last output
    assert tree.evict(3) == 3
    assert tree.match_prefix(RadixKey([1, 2, 3, 4, 9])).device_prefix_len == 4


def test_a_request_counts_one_hit_on_the_prompt_it_checkpointed_then_released() -> None:
    # radix_cache.py:480-484: inserts count hits only past cache_inserted_len, what the
    # request inserted before (its checkpoint after the prefill), not again at release
    scheduler = _scheduler(100)
    scheduler.add_request(Req("A", [1, 2, 3, 4], 3))
    scheduler.run()
    [prompt] = scheduler.tree_cache.root_node.children.values()
    [outputs] = prompt.children.values()
    assert (prompt.hit_count, outputs.hit_count) == (1, 1)


def test_a_retracted_request_counts_its_hits_again() -> None:
    # schedule_batch.py:2059: reset_for_retract forgets cache_inserted_len
    req = Req("A", [1, 2, 3], 5)
    req.cache_inserted_len = 3
    req.reset_for_retract()
    assert req.cache_inserted_len == 0


def _tree_with_two_cached_prompts() -> Scheduler:
    scheduler = _scheduler(100)
    scheduler.add_request(Req("old", [1, 2, 3, 4], 1))
    scheduler.run()
    scheduler.add_request(Req("new", [5, 6, 7, 8], 1))
    scheduler.run()
    return scheduler


def _cached_after_refresh_and_evict(earlier_calls: int) -> list[list[int]]:
    """Two prompts cached, "old" first; a request reusing "old" waits; calc_priority is
    called after ``earlier_calls`` other calls; then one prompt's worth is evicted."""
    scheduler = _tree_with_two_cached_prompts()
    policy = SchedulePolicy("fcfs", scheduler.tree_cache)
    for _ in range(earlier_calls):
        policy.calc_priority([Req("x", [9], 1)])  # type: ignore[list-item]
    policy.calc_priority([Req("w", [1, 2, 3, 4, 9], 1)])  # type: ignore[list-item]
    scheduler.tree_cache.evict(4)
    return [list(node.key) for node in scheduler.tree_cache.root_node.children.values()]


def test_fcfs_refreshes_the_waiting_requests_prefixes_on_every_32nd_call() -> None:
    # schedule_policy.py:280-302: a cache-agnostic policy with LRU eviction touches the
    # cached prefix of each waiting request (head last) on the 1st, 33rd, 65th...
    # calc_priority, so a prefix a waiting request will reuse is evicted last
    assert _cached_after_refresh_and_evict(0) == [[1, 2, 3, 4]]
    assert _cached_after_refresh_and_evict(32) == [[1, 2, 3, 4]]
    # on the calls between, the least recently used prompt goes first
    assert _cached_after_refresh_and_evict(1) == [[5, 6, 7, 8]]
    assert _cached_after_refresh_and_evict(31) == [[5, 6, 7, 8]]
