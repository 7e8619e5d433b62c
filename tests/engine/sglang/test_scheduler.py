"""The minimal scheduler over our SGLang model: slot conservation, locks, lpm vs fcfs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.sglang.allocator import make_allocator
from engine.sglang.radix_cache import RadixCache
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
    scheduler.add_request(Req("first", [*shared, 1], 10))
    scheduler.step()
    assert scheduler.running and tree.protected_size() == len(shared) + 1
    scheduler.add_request(Req("second", [*shared, 2], 10))
    (second,) = scheduler.schedule()
    assert second.prefix_len == len(shared)
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
