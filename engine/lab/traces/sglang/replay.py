"""A request trace replayed in order through SGLang 0.5.23's model (engine/sglang/), as
engine/lab/traces/replay.py replays it through vLLM's.

One request after another, nothing concurrent (the Mooncake paper's Figure 9 method), each
making the calls SGLang's scheduler makes on its ``RadixCache`` and a token-to-KV pool of
``capacity_tokens`` slots: ``match_prefix`` (at most the prompt less one token,
``match_kv_cache``), the matched path locked, the missed tokens allocated, evicting
unlocked leaves of the tree (least recently used first, SGLang's default) when the pool is
short; the request finishes after its prefill (one output token, never computed), so its
prompt goes into the tree (``release_kv_cache``: insert, free the duplicates) and the lock
is released. ``via_scheduler=True`` runs each request through SGLang's ``Scheduler.step``
instead: the same replay, request by request, at about half the speed. The page size is
SGLang's default 1 (a hit is counted to the token) unless one is asked.

The same figures as vLLM's replay (an ``InOrderReplay`` with ``engine`` "sglang"):
``hits`` is the matched prefix at admission; ``uncapped_hits`` also counts the last page
when the tree holds it (the cap's cost: one token at page size 1); ``evictions`` counts
evicted tokens; ``num_gpu_blocks`` is the pool's pages. A request SGLang could never admit
(its prompt, its one output token and a page not strictly below the pool) is skipped and
counted as a miss, as on vLLM. With pages, a prefill evicts for its extend and one page
more (``alloc_paged_token_slots_extend``), as the scheduler does.

**The pool counts slots** (``SlotCounter``) instead of listing them: the tree stores each
token's slot index and gives it back, but nothing the tree or the scheduler decides depends
on which index it is, and SGLang's own free list at the whole-trace capacity (147 million
slots) is gigabytes of Python ints. ``allocator=make_allocator`` replays with SGLang's real
allocator instead (a test checks that both give the same replay).

Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import cast

from engine.lab.traces.replay import InOrderReplay, Stop, curve, replay_entries
from engine.lab.traces.request_trace import TraceEntry, prompt_tuple
from engine.lab.workload.sglang.runner import SGLANG_PAGE_SIZE, SGLANG_SCHEDULE_POLICY
from engine.sglang.allocator import KVAllocator
from engine.sglang.kv_events import KVCacheEvent
from engine.sglang.radix_cache import RadixCache, RadixKey, TreeNode
from engine.sglang.schedule_policy import fits_an_empty_pool
from engine.sglang.scheduler import Req, Scheduler

# The in-order replay computes the prompt only: one output token, sampled, never computed.
MAX_NEW_TOKENS = 1
AllocatorFactory = Callable[[int, int], KVAllocator]


class SlotCounter:
    """SGLang's token-to-KV pool (``TokenToKVPoolAllocator``, or the paged one) as a count
    of free slots: ``alloc`` hands out that many slots (all index 0) and ``free_segment``
    gives back whole pages, as the real ones do. Slot indices change nothing the tree or
    the scheduler decides in an in-order replay (no request ever grows a partial page)."""

    def __init__(self, size: int, page_size: int = 1) -> None:
        if size < page_size:
            raise ValueError(f"a pool of {size} slots holds no page of {page_size}")
        self.page_size = page_size
        self.size = size
        self.num_pages = size // page_size
        self.free_slots = self.num_pages * page_size

    def available_size(self) -> int:
        return self.free_slots

    def alloc(self, need_size: int) -> list[int] | None:
        assert need_size % self.page_size == 0, "The allocation size should be page-aligned"
        if need_size > self.free_slots:
            return None
        self.free_slots -= need_size
        return [0] * need_size

    def free_segment(self, free_index: Sequence[int], *, start_pos: int) -> None:
        """Every page the segment starts in comes back (a partial last page whole)."""
        pages = -(-len(free_index) // self.page_size)
        self.free_slots += pages * self.page_size

    free = free_segment  # the scheduler frees segments only


def pool_pages(allocator: KVAllocator | SlotCounter) -> int:
    return allocator.available_size() // allocator.page_size


def replay_in_order_sglang(
    entries: Sequence[TraceEntry],
    capacity_tokens: int,
    page_size: int = SGLANG_PAGE_SIZE,
    per_request: bool = False,
    stop: Stop | None = None,
    allocator: AllocatorFactory | None = None,
    via_scheduler: bool = False,
) -> InOrderReplay:
    """Replay the requests in order on SGLang's model at this capacity (see the module's
    docstring). ``per_request`` and ``stop`` as in ``replay_in_order``; ``allocator``
    builds the pool from (size, page size), by default a ``SlotCounter``.

    The replay makes SGLang's scheduler's calls on the tree and the pool itself (as
    vLLM's replay calls its ``KVCacheManager``); ``via_scheduler`` runs each request
    through SGLang's ``Scheduler.step`` instead, the same replay at about half the speed
    (a test checks they agree request by request)."""
    replay = (SchedulerReplay if via_scheduler else SGLangReplay)(
        capacity_tokens, page_size, allocator
    )
    return replay_entries(replay, entries, per_request, stop)


class SGLangReplay:
    """SGLang's side of an in-order replay (``EngineReplay``), a request at a time,
    SGLang's scheduler's calls made directly: ``match_kv_cache``'s
    match (all but the last token) and the lock; ``alloc_for_extend``'s eviction and allocation;
    ``release_kv_cache``'s insert of the prompt, the duplicates and the partial page freed,
    the unlock. (The scheduler's checkpoint also matches the inserted prompt again to move
    the lock: that only restamps the path it just stamped, and the lock is released.)"""

    def __init__(
        self,
        capacity_tokens: int,
        page_size: int,
        allocator: AllocatorFactory | None,
        enable_kv_cache_events: bool = False,
    ) -> None:
        if page_size < 1 or capacity_tokens < page_size:
            raise ValueError(
                f"a capacity of {capacity_tokens} tokens holds no {page_size}-token page"
            )
        self.page_size = page_size
        self.pool = (
            allocator(capacity_tokens, page_size)
            if allocator
            else SlotCounter(capacity_tokens, page_size)
        )
        self.counting = isinstance(self.pool, SlotCounter)
        self.tree = RadixCache(
            self.pool, page_size=page_size, enable_kv_cache_events=enable_kv_cache_events
        )
        self.result = InOrderReplay(
            capacity_tokens, page_size, pool_pages(self.pool), engine="sglang"
        )

    def fits(self, entry: TraceEntry) -> bool:
        """What admission wants with nothing running: the prompt, the output token and a
        page strictly below the pool."""
        slots = self.result.num_gpu_blocks * self.page_size
        return fits_an_empty_pool(entry.input_length, MAX_NEW_TOKENS, self.page_size, slots)

    def replay_one(self, index: int, entry: TraceEntry) -> tuple[int, int, int]:
        # A tuple once: the tree's keys take it as it is (a list was copied twice).
        return self.replay_tokens(index, prompt_tuple(entry))

    def replay_tokens(self, index: int, token_ids: tuple[int, ...]) -> tuple[int, int, int]:
        """One admitted request: (hit, uncapped hit, evicted tokens)."""
        tree, pool, page_size = self.tree, self.pool, self.page_size
        num_tokens = len(token_ids)
        match = tree.match_prefix(RadixKey(token_ids[: num_tokens - 1]))
        hit, last_node = match.device_prefix_len, match.last_device_node
        uncapped = _uncapped(tree, token_ids, hit, last_node)
        tree.inc_lock_ref(last_node)
        need = -(-num_tokens // page_size) * page_size - hit
        # alloc_for_extend evicts for the extend, and with pages for one page more
        evict_for = num_tokens - hit + (page_size if page_size > 1 else 0)
        evicted = 0
        if pool.available_size() < evict_for:
            evicted = tree.evict(evict_for - pool.available_size())
        slots = pool.alloc(need)
        assert slots is not None, "an in-order replay always has room for one request"
        # The path's slots: the match ends at its last node's end, so exactly ``hit`` of them
        # (a SlotCounter's are all 0: the same list, made at once).
        row = [0] * hit if self.counting else tree.path_device_indices(last_node)
        row += slots
        key = RadixKey(token_ids).page_aligned(page_size)
        cached = tree.insert(key, row).prefix_len  # insert takes row[: len(key)]
        pool.free_segment(row[hit:cached], start_pos=hit)
        pool.free_segment(row[len(key) :], start_pos=len(key))
        tree.dec_lock_ref(last_node)
        return hit, uncapped, evicted

    def take_events(self) -> list[KVCacheEvent]:
        return self.tree.take_events()

    def finish(self) -> None:
        _unlink(self.tree)


class SchedulerReplay(SGLangReplay):
    """Each request through SGLang's ``Scheduler.step`` (fcfs, one request a step)."""

    def __init__(
        self, capacity_tokens: int, page_size: int, allocator: AllocatorFactory | None
    ) -> None:
        super().__init__(capacity_tokens, page_size, allocator)
        tree = self.tree
        self.scheduler = scheduler = Scheduler(
            cast(KVAllocator, self.pool), tree, SGLANG_SCHEDULE_POLICY
        )
        self.admitted: list[tuple[int, int]] = []  # (hit, uncapped hit) of the one admitted
        self.evicted = 0
        schedule, evict = scheduler.schedule, tree.evict

        def recording_schedule() -> list[Req]:
            admitted = schedule()
            for req in admitted:
                assert req.last_node is not None
                uncapped = _uncapped(tree, req.origin_input_ids, req.prefix_len, req.last_node)
                self.admitted.append((req.prefix_len, uncapped))
            return admitted

        def counting_evict(num_tokens: int) -> int:
            freed = evict(num_tokens)
            self.evicted += freed
            return freed

        scheduler.schedule = recording_schedule  # type: ignore[method-assign]
        tree.evict = counting_evict  # type: ignore[method-assign]

    def replay_tokens(self, index: int, token_ids: tuple[int, ...]) -> tuple[int, int, int]:
        scheduler = self.scheduler
        req = Req(str(index), list(token_ids), max_new_tokens=MAX_NEW_TOKENS)
        scheduler.add_request(req)
        finished = scheduler.step()
        assert finished == [req] and len(self.admitted) == 1, "one request, one step"
        scheduler.finished.clear()  # its tokens would stay for the whole replay
        ((hit, uncapped),) = self.admitted
        self.admitted.clear()
        evicted, self.evicted = self.evicted, 0
        return hit, uncapped, evicted

    def finish(self) -> None:
        del self.scheduler.schedule, self.tree.evict  # the wrappers (they refer to the tree)
        super().finish()


def _unlink(tree: RadixCache) -> None:
    """Let the tree go by reference counting: a node and its parent refer to each other,
    so a dropped tree of a whole trace's prompts waited for the cyclic garbage collector,
    which walks every slot list of it."""
    for node in tree.all_nodes():
        node.parent = None


def _uncapped(tree: RadixCache, token_ids: Sequence[int], hit: int, last_node: TreeNode) -> int:
    """The hit without the cap: the match stopped one page short of the prompt's last whole
    page (``max_prefix_len``); does the tree hold that page too? The match ends at a node's
    end (it splits a node it ends inside), so the page is a child of ``last_node``. Looked
    up without touching the tree (no access stamp, no split)."""
    num_tokens = len(token_ids)
    page_size = tree.page_size
    whole = num_tokens // page_size * page_size
    if hit != (num_tokens - 1) // page_size * page_size or whole == hit:
        return hit
    page = RadixKey(token_ids[hit:whole])
    return whole if page.child_key(page_size) in last_node.children else hit


def hit_rate_curve_sglang(
    entries: Sequence[TraceEntry],
    capacities: Sequence[int],
    page_size: int = SGLANG_PAGE_SIZE,
    stop: Stop | None = None,
) -> Iterator[InOrderReplay]:
    """The in-order replay on SGLang at each capacity (``curve``)."""
    return curve(
        lambda capacity: replay_in_order_sglang(entries, capacity, page_size, stop=stop),
        capacities,
        stop,
    )
