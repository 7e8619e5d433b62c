"""SGLang's flush_cache over our model (managers/scheduler.py:5518-5547, is_fully_idle
:5337-5360): refused while anything waits, runs, or was run by the last iteration."""

from __future__ import annotations

from engine.sglang.allocator import make_allocator
from engine.sglang.radix_cache import RadixCache
from engine.sglang.scheduler import Req, Scheduler


def scheduler(page_size: int = 1) -> Scheduler:
    allocator = make_allocator(64, page_size)
    return Scheduler(allocator, RadixCache(allocator, page_size=page_size))


def test_a_flush_waits_for_an_idle_iteration_after_the_last_request() -> None:
    s = scheduler()
    s.add_request(Req("a", list(range(1, 11)), max_new_tokens=2))
    assert not s.flush_cache()  # waiting
    s.step()  # prefill
    assert not s.flush_cache() and s.running_batch_size() == 0  # not merged in yet
    s.step()  # decode: a finishes
    assert not s.running and not s.waiting_queue and s.tree_cache.evictable_size() > 0
    # the decode batch is still the last batch, finished request and all
    assert not s.flush_cache() and s.running_batch_size() == 1
    assert s.step() == []  # an idle iteration: no batch
    assert s.flush_cache()
    assert s.tree_cache.evictable_size() == 0 and s.allocator.available_size() == 64
    assert [n for n in s.tree_cache.all_nodes() if n is not s.tree_cache.root_node] == []


def test_a_running_request_refuses_the_flush_and_keeps_its_slots() -> None:
    s = scheduler(page_size=4)
    s.add_request(Req("a", list(range(1, 11)), max_new_tokens=5))
    s.step()
    s.step()
    free, tree = s.allocator.available_size(), s.tree_cache.total_size()
    assert not s.flush_cache() and s.running_batch_size() == 1
    assert (s.allocator.available_size(), s.tree_cache.total_size()) == (free, tree)
