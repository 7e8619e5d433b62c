"""A minimal SGLang scheduler: just what touches the prefix cache.

Each ``step`` orders the waiting queue (``SchedulePolicy``), admits requests while
the pool (free slots plus evictable tree tokens, less what running requests may
still generate) holds their uncached tokens plus their ``max_new_tokens`` and the
prefill batch's input budget (``max_prefill_tokens``) is not spent, runs a
deterministic stand-in model (one token per running request) and releases the
finished ones. An admitted request locks its matched path; once its prefill ran, its
prompt goes into the tree (``checkpoint``), so later requests can match it while it
still runs; on finish its whole sequence does, duplicates of cached slots go back to
the pool, and its lock is released (``mem_cache/common.py`` ``release_kv_cache``).

Slot conservation: free slots + slots in the tree + slots held only by running
requests == pool size, at every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.sglang.allocator import KVAllocator
from engine.sglang.radix_cache import RadixCache, RadixKey, TreeLock, TreeNode
from engine.sglang.schedule_policy import CLIP_MAX_NEW_TOKENS, SchedulePolicy, match_kv_cache

FIRST_GENERATED_TOKEN_ID = 50_000
# server args' max_prefill_tokens default (arg_groups/fields/schedule.py:71-81)
MAX_PREFILL_TOKENS = 16_384


def greedy_token(all_token_ids: list[int]) -> int:
    """The stand-in model's next token: a function of the sequence length alone."""
    return FIRST_GENERATED_TOKEN_ID + len(all_token_ids)


@dataclass(eq=False)
class Req:
    rid: str
    origin_input_ids: list[int]
    max_new_tokens: int
    extra_key: str | None = None
    output_ids: list[int] = field(default_factory=list)
    prefix_len: int = 0
    num_matched_prefix_tokens: int = 0
    last_node: TreeNode | None = None
    lock: TreeLock | None = None
    # the request's row of KV slots, one per token whose KV is computed
    kv_row: list[int] = field(default_factory=list)
    # row positions [0, cache_protected_len) are the tree's, not the request's
    cache_protected_len: int = 0

    def finished(self) -> bool:
        return len(self.output_ids) >= self.max_new_tokens

    def owned_kv_len(self) -> int:
        """Tokens with KV: all but the last sampled one."""
        return len(self.origin_input_ids) + len(self.output_ids) - 1


class Scheduler:
    def __init__(
        self,
        allocator: KVAllocator,
        tree_cache: RadixCache,
        schedule_policy: str = "fcfs",
        max_prefill_tokens: int = MAX_PREFILL_TOKENS,
    ) -> None:
        assert allocator.page_size == tree_cache.page_size
        self.allocator = allocator
        self.tree_cache = tree_cache
        self.page_size = allocator.page_size
        self.policy = SchedulePolicy(schedule_policy, tree_cache)
        self.max_prefill_tokens = max_prefill_tokens
        self.waiting_queue: list[Req] = []
        self.running: list[Req] = []
        self.finished: list[Req] = []

    def add_request(self, req: Req) -> None:
        assert req.max_new_tokens >= 1 and req.origin_input_ids
        self.waiting_queue.append(req)

    # ---- slots ----

    def _page_ceil(self, n: int) -> int:
        return -(-n // self.page_size) * self.page_size

    def _alloc_row(self, req: Req, new_len: int) -> bool:
        """Grow the request's row to ``new_len`` positions, evicting if short. With
        pages, a new page is taken only when the row's last page is full."""
        have = self._page_ceil(len(req.kv_row))
        need = self._page_ceil(new_len) - have
        slots: list[int] = []
        if need > 0:
            if self.allocator.available_size() < need:
                self.tree_cache.evict(need - self.allocator.available_size())
            got = self.allocator.alloc(need)
            if got is None:
                return False
            slots = got
        if self.page_size > 1 and len(req.kv_row) < have:
            last_page = req.kv_row[-1] // self.page_size * self.page_size
            spare = list(range(req.kv_row[-1] + 1, last_page + self.page_size))
            slots = spare + slots
        req.kv_row.extend(slots[: new_len - len(req.kv_row)])
        return True

    def reserved_tokens(self) -> int:
        """What the running requests may still generate (each clipped)."""
        return sum(
            min(r.max_new_tokens - len(r.output_ids), CLIP_MAX_NEW_TOKENS) for r in self.running
        )

    def rem_total_tokens(self, reserved: int | None = None) -> int:
        """``reserved``: ``reserved_tokens()``, when the caller keeps it up to date."""
        if reserved is None:
            reserved = self.reserved_tokens()
        return self.allocator.available_size() + self.tree_cache.evictable_size() - reserved

    # ---- a step ----

    def schedule(self) -> list[Req]:
        """Admit what fits, in policy order; stop at the first that does not. The
        batch's input budget is PrefillAdder's ``rem_input_tokens`` with chunked
        prefill off: the first request is admitted even above it, a later one only
        while its extend is below what is left (schedule_policy.py:883-884,
        1629-1633, 938)."""
        self.policy.calc_priority(self.waiting_queue)  # type: ignore[arg-type]
        admitted: list[Req] = []
        rem_input_tokens = self.max_prefill_tokens
        reserved = self.reserved_tokens()  # kept up to date as requests are admitted
        for req in list(self.waiting_queue):
            if rem_input_tokens <= 0:
                break
            full_len = len(req.origin_input_ids) + len(req.output_ids)
            match_kv_cache(req, self.tree_cache, max_prefix_len=full_len - 1)
            assert req.last_node is not None
            # the prefix is pinned while the request is sized, so it is not counted
            # as evictable (schedule_policy.py's _lock_node)
            lock = self.tree_cache.lock(req.last_node)
            extend = self._page_ceil(full_len) - req.prefix_len
            need = extend + min(req.max_new_tokens, CLIP_MAX_NEW_TOKENS)
            if need > self.rem_total_tokens(reserved) or (admitted and extend >= rem_input_tokens):
                self.tree_cache.unlock(lock)
                break
            rem_input_tokens -= extend
            reserved += min(req.max_new_tokens - len(req.output_ids), CLIP_MAX_NEW_TOKENS)
            req.lock = lock
            req.kv_row = self.tree_cache.path_device_indices(req.last_node)[: req.prefix_len]
            req.cache_protected_len = req.prefix_len
            ok = self._alloc_row(req, full_len)
            assert ok, "admission checked the pool"
            self.waiting_queue.remove(req)
            self.running.append(req)
            admitted.append(req)
        return admitted

    def step(self) -> list[Req]:
        """One step; returns the requests that finished in it. A request whose
        prefill ran and that goes on publishes what it computed
        (batch_result_processor.py:393-394, ``checkpoint_kv_cache``)."""
        prefilled = {
            id(req): len(req.origin_input_ids) + len(req.output_ids) for req in self.schedule()
        }
        done: list[Req] = []
        for req in self.running:
            num_tokens = len(req.origin_input_ids) + len(req.output_ids)
            if len(req.kv_row) < num_tokens:
                # decode: the last sampled token's KV is computed now
                ok = self._alloc_row(req, num_tokens)
                assert ok, "admission reserved max_new_tokens"
            req.output_ids.append(FIRST_GENERATED_TOKEN_ID + num_tokens)  # greedy_token
            if req.finished():
                done.append(req)
            elif id(req) in prefilled:
                extend_end = prefilled[id(req)]
                self.checkpoint(req, extend_end)
                req.prefix_len = extend_end  # common.py:281
        for req in done:
            self.running.remove(req)
            self.release_kv_cache(req)
            self.finished.append(req)
        return done

    def run(self, max_steps: int = 10_000) -> None:
        for _ in range(max_steps):
            if not self.waiting_queue and not self.running:
                return
            self.step()
        raise RuntimeError("requests still waiting or running")

    # ---- finishing ----

    def checkpoint(self, req: Req, up_to: int) -> None:
        """Insert ``tokens[:up_to]`` (page-aligned) with the row's slots, free the row's
        duplicates of slots the tree already had, repoint the row at the tree's slots
        and move the lock to the new last node (``RadixCache.checkpoint``)."""
        token_ids = (req.origin_input_ids + req.output_ids)[:up_to]
        key = RadixKey(token_ids, req.extra_key).page_aligned(self.page_size)
        result = self.tree_cache.insert(key, req.kv_row[: len(key)])
        self.allocator.free_segment(
            req.kv_row[req.cache_protected_len : result.prefix_len],
            start_pos=req.cache_protected_len,
        )
        new_last_node = self.tree_cache.match_prefix(key).last_device_node
        new_indices = self.tree_cache.path_device_indices(new_last_node)
        assert len(new_indices) == len(key)
        req.kv_row[req.cache_protected_len : len(new_indices)] = new_indices[
            req.cache_protected_len :
        ]
        req.cache_protected_len = len(new_indices)
        self.tree_cache.unlock(req.lock)
        req.lock = self.tree_cache.lock(new_last_node)
        req.last_node = new_last_node

    def release_kv_cache(self, req: Req) -> None:
        owned = req.owned_kv_len()
        self.checkpoint(req, owned)
        # the rest of the row, with the partial last page
        tail = req.kv_row[req.cache_protected_len :]
        self.allocator.free_segment(tail, start_pos=req.cache_protected_len)
        self.tree_cache.unlock(req.lock)
        req.lock = None
        req.kv_row = []
