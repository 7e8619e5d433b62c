"""A minimal SGLang scheduler: just what touches the prefix cache.

One ``step`` is one iteration of SGLang's non-overlap event loop
(``event_loop_normal``, managers/scheduler.py:2026-2059): ``get_next_batch_to_run``
picks a batch, the batch runs, ``process_batch_result`` takes its tokens. The batch is
a prefill batch when one is admitted, else the running requests' decode batch
(:3992-4004, "Run prefill first if possible"): never both.

A prefill batch: the waiting queue is ordered (``SchedulePolicy``) and requests are
admitted (``PrefillAdder``: a request fits while its uncached tokens, its remaining
output, clipped, and one page stay strictly below the free and evictable slots less
what is already promised: the running requests' remaining outputs times
``new_token_ratio`` and, for each request admitted before it, its page-ceiled extend,
a page and its output), its slots are allocated (``alloc_for_extend``), and each
request gets its first token; one that is done (``max_new_tokens`` 1) is released at
once, the others publish their prompt in the tree (``checkpoint``), so later requests
match it while they run, and join the running batch. A decode batch
(``update_running_batch``): if the pages the decode needs cannot be had even by
evicting, requests are retracted (the KV past what the tree holds, their outputs',
freed, not cached; their prompt stays in the tree; back to the end of the waiting
queue) until they can; each request left gets one token. A deterministic
stand-in model picks the tokens. An admitted request locks its matched path; on
finish its whole sequence goes into the tree, duplicates of cached slots go back to
the pool, and its lock is released (``mem_cache/common.py`` ``release_kv_cache``).

Slot conservation: free slots + slots in the tree + slots held only by running
requests == pool size, at every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.sglang.allocator import KVAllocator
from engine.sglang.new_token_ratio_tracker import SGLANG_RETRACT_DECODE_STEPS, NewTokenRatioTracker
from engine.sglang.radix_cache import RadixCache, RadixKey, TreeLock, TreeNode
from engine.sglang.schedule_policy import (
    AddReqResult,
    PrefillAdder,
    SchedulePolicy,
    match_kv_cache,
)

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
    # how much of the sequence this request has inserted into the tree (ReqKvInfo's
    # cache_inserted_len): a later insert counts hits only past it
    cache_inserted_len: int = 0
    retraction_count: int = 0
    # why it left the scheduler unfinished: "abort" (out of memory even alone)
    to_finish: str | None = None

    def finished(self) -> bool:
        return len(self.output_ids) >= self.max_new_tokens

    def owned_kv_len(self) -> int:
        """Tokens with KV: all but the last sampled one."""
        return len(self.origin_input_ids) + len(self.output_ids) - 1

    def reset_for_retract(self) -> None:
        """schedule_batch.py:2049-2066: back to a fresh request that keeps its outputs
        (a later prefill computes the prompt and them again)."""
        self.retraction_count += 1
        self.prefix_len = 0
        self.last_node = None
        self.cache_protected_len = 0
        self.cache_inserted_len = 0
        self.num_matched_prefix_tokens = 0
        self.lock = None


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
        self.finished: list[Req] = []  # finished, and the few aborted (``to_finish``)
        self.new_token_ratio_tracker = NewTokenRatioTracker.from_config()  # scheduler.py:1474
        # the running batch's batch_is_full: a prefill that ran out of KV stops
        # admission until a running request leaves (scheduler.py:4090-4101, 4279-4284)
        self.batch_is_full = False
        # the batch the last iteration ran, as run (finished requests included), and
        # whether it was a prefill: SGLang's last_batch, which flush_cache's idle check
        # reads (scheduler.py:2056, 5348)
        self.last_batch: list[Req] = []
        self.last_batch_is_prefill = False

    def add_request(self, req: Req) -> None:
        assert req.max_new_tokens >= 1 and req.origin_input_ids
        self.waiting_queue.append(req)

    # ---- slots ----

    def _page_ceil(self, n: int) -> int:
        return -(-n // self.page_size) * self.page_size

    def evict_from_tree_cache(self, num_tokens: int) -> None:
        """Evict until ``num_tokens`` slots are free or nothing is evictable
        (mem_cache/common.py:283-289, allocator/base.py:155-169)."""
        shortfall = num_tokens - self.allocator.available_size()
        if shortfall > 0:
            self.tree_cache.evict(shortfall)

    def _grow_rows(self, reqs: list[Req], new_lens: list[int]) -> bool:
        """Grow each request's row to its new length with one allocation for the batch,
        handed out in batch order; with pages, a row first fills its last page and takes
        a new page only when that is full (``alloc_extend`` / ``alloc_decode``,
        allocator/paged.py:41-133). Evicts nothing: the caller has."""
        needs = [
            self._page_ceil(new_len) - self._page_ceil(len(req.kv_row))
            for req, new_len in zip(reqs, new_lens, strict=True)
        ]
        slots: list[int] = []
        if sum(needs):
            got = self.allocator.alloc(sum(needs))
            if got is None:
                return False
            slots = got
        start = 0
        for req, new_len, need in zip(reqs, new_lens, needs, strict=True):
            fresh = slots[start : start + need]
            start += need
            spare: list[int] = []
            if self.page_size > 1 and len(req.kv_row) < self._page_ceil(len(req.kv_row)):
                last_page = req.kv_row[-1] // self.page_size * self.page_size
                spare = list(range(req.kv_row[-1] + 1, last_page + self.page_size))
            req.kv_row.extend((spare + fresh)[: new_len - len(req.kv_row)])
        return True

    # ---- a prefill batch ----

    def schedule(self) -> list[Req]:
        """Admit what fits, in policy order, into one prefill batch and allocate its
        slots (``_get_new_batch_prefill_raw``, scheduler.py:4079-4330, with chunked
        prefill off: see ``PrefillAdder``)."""
        if not self.running:
            self.batch_is_full = False  # :4095-4096
        if self.batch_is_full or not self.waiting_queue:
            return []  # :4098-4101
        self.policy.calc_priority(self.waiting_queue)  # type: ignore[arg-type]
        adder = PrefillAdder(
            self.page_size,
            self.tree_cache,
            self.allocator,
            self.running,
            self.new_token_ratio_tracker.current,
            self.max_prefill_tokens,
        )
        for req in self.waiting_queue:
            if adder.budget_state() is AddReqResult.OTHER:
                break  # :4207-4208
            # init_next_round_input: match all but the last token (schedule_batch.py:1692-1768)
            full_len = len(req.origin_input_ids) + len(req.output_ids)
            match_kv_cache(req, self.tree_cache, max_prefix_len=full_len - 1)
            req.cache_protected_len = req.prefix_len  # schedule_batch.py:1742-1743
            res = adder.add_one_req(req)
            if res is not AddReqResult.CONTINUE:
                if res is AddReqResult.NO_TOKEN:
                    # :4279-4284 sets it on the running batch. An empty one is replaced
                    # by this prefill batch when the next iteration merges it (:3956-3958,
                    # a new batch's flag is False) or, if all of it finished at its
                    # prefill, cleared (:4095-4096): the flag outlives the step only
                    # when requests were running.
                    self.batch_is_full = bool(self.running)
                break
        admitted: list[Req] = adder.can_run_list  # type: ignore[assignment]
        if not admitted:
            return []
        taken = {id(req) for req in admitted}
        self.waiting_queue[:] = [req for req in self.waiting_queue if id(req) not in taken]
        self.alloc_for_extend(admitted)
        self.running.extend(admitted)
        return admitted

    def alloc_for_extend(self, reqs: list[Req]) -> None:
        """Each row starts with its cached prefix's slots; the batch's uncached tokens
        are allocated at once after evicting for them, and with pages for one more page
        per request (mem_cache/allocation.py:374-488: ``alloc_token_slots`` :152-172,
        ``alloc_paged_token_slots_extend`` :186-201)."""
        new_lens = []
        for req in reqs:
            assert req.last_node is not None
            req.kv_row = self.tree_cache.path_device_indices(req.last_node)[: req.prefix_len]
            req.cache_protected_len = req.prefix_len
            new_lens.append(len(req.origin_input_ids) + len(req.output_ids))
        extend_num_tokens = sum(n - req.prefix_len for req, n in zip(reqs, new_lens, strict=True))
        if self.page_size == 1:
            self.evict_from_tree_cache(extend_num_tokens)
        else:
            self.evict_from_tree_cache(extend_num_tokens + len(reqs) * self.page_size)
        ok = self._grow_rows(reqs, new_lens)
        assert ok, "admission checked the pool"

    # ---- a decode batch ----

    def new_tokens_required_next_decode(self, reqs: list[Req]) -> int:
        """A page for each request whose last page is full (schedule_batch.py:3403-3417;
        ``kv_committed_len`` is the row's length)."""
        return self.page_size * sum(1 for r in reqs if len(r.kv_row) % self.page_size == 0)

    def check_decode_mem(self, reqs: list[Req]) -> bool:
        """Evict for the next decode's pages, then whether they are free
        (schedule_batch.py:3432-3449, allocator/base.py:171-185)."""
        num_tokens = self.new_tokens_required_next_decode(reqs)
        self.evict_from_tree_cache(num_tokens)
        return self.allocator.available_size() >= num_tokens

    def update_running_batch(self, batch: list[Req]) -> list[Req]:
        """Decode the running requests (scheduler.py:4459-4552): retract some if their
        pages cannot be had, else decay ``new_token_ratio``; then allocate the decode's
        slots. Returns the requests that decode, in the batch's new order."""
        if not batch:
            return batch
        initial_bs = len(batch)
        if not self.check_decode_mem(batch):
            retracted, new_token_ratio, batch = self.retract_decode(batch)
            self.new_token_ratio_tracker.current = new_token_ratio  # :4513
            self.waiting_queue.extend(retracted)  # _add_request_to_queue :3480-3497
        else:
            self.new_token_ratio_tracker.decay_step()  # :4542
        if len(batch) < initial_bs:
            self.batch_is_full = False  # :4544-4545
        if batch:
            self.alloc_for_decode(batch)
        return batch

    def retract_decode(self, batch: list[Req]) -> tuple[list[Req], float, list[Req]]:
        """schedule_batch.py:3451-3542: retract the least preferred first (the fewest
        outputs, then the longest prompt: the sort of :3544-3580, which is stable) until
        the rest's decode fits, always keeping one; if even that one does not fit, it is
        aborted. Returns (retracted, the new ratio, the requests kept, in sorted order)."""
        sorted_indices = sorted(
            range(len(batch)),
            key=lambda i: (len(batch[i].output_ids), -len(batch[i].origin_input_ids)),
            reverse=True,
        )
        retracted: list[Req] = []
        first_iter = True
        while first_iter or not self.check_decode_mem([batch[i] for i in sorted_indices]):
            if len(sorted_indices) == 1:
                break  # Always keep at least one request
            first_iter = False
            req = batch[sorted_indices.pop()]
            self.release_req(req, len(sorted_indices))
            retracted.append(req)
        if len(sorted_indices) <= 1 and not self.check_decode_mem(
            [batch[i] for i in sorted_indices]
        ):
            last_req = batch[sorted_indices.pop()]
            last_req.to_finish = "abort"  # out of memory even alone (:3511-3532)
            self.release_req(last_req, 0)
            self.finished.append(last_req)
        kept = [batch[i] for i in sorted_indices]  # filter_batch(keep_indices=...)
        return retracted, NewTokenRatioTracker.estimate_new_token_ratio_after_retract(kept), kept

    def release_req(self, req: Req, remaing_req_count: int) -> None:
        """schedule_batch.py:2360-2395: free the request's KV past ``cache_protected_len``
        (the prompt its prefill put in the tree stays) without caching it, evict
        enough for the rest's next 20 decode steps, forget the match."""
        self.release_kv_cache(req, checkpoint=False)
        self.evict_from_tree_cache(remaing_req_count * SGLANG_RETRACT_DECODE_STEPS)
        req.reset_for_retract()

    def alloc_for_decode(self, batch: list[Req]) -> None:
        """Evict for a slot per request, or with pages for a page per request whether it
        needs one or not, then allocate (mem_cache/allocation.py:572-585, 625-689)."""
        if self.page_size == 1:
            self.evict_from_tree_cache(len(batch))
        else:
            self.evict_from_tree_cache(len(batch) * self.page_size)
        ok = self._grow_rows(batch, [len(r.kv_row) + 1 for r in batch])
        assert ok, "check_decode_mem found the pages"

    # ---- a step ----

    def step(self) -> list[Req]:
        """One iteration of ``event_loop_normal`` (scheduler.py:2026-2059): run a prefill
        batch if one is admitted, else decode the running batch; returns the requests
        that finished in it. The running batch already holds the requests the last
        prefill left unfinished (merged at the start of the next iteration,
        :3903-3968). With no batch to run and nothing waiting or running the scheduler
        is idle and ``new_token_ratio`` starts over (``on_idle``, :5254, 5318)."""
        new_batch = self.schedule()
        self.last_batch, self.last_batch_is_prefill = list(new_batch), bool(new_batch)
        if new_batch:
            # Run prefill first if possible (:3992-3994): the running requests wait
            return self.process_batch_result_prefill(new_batch)
        # Run decode (:3995-4004)
        decode_batch = self.update_running_batch(self.running)
        self.running = decode_batch
        self.last_batch = list(decode_batch)
        if decode_batch:
            return self.process_batch_result_decode(decode_batch)
        if not self.waiting_queue and not self.running:
            self.new_token_ratio_tracker.reset()  # on_idle, fully idle
        return []

    def process_batch_result_prefill(self, batch: list[Req]) -> list[Req]:
        """batch_result_processor.py:307-394: each request, in batch order, gets the
        token sampled at its prefill; one that is done is released at once (its
        sequence cached, ``release_kv_cache``), the others publish what they computed
        (``checkpoint_kv_cache``, then ``prefix_len = extend_end``, common.py:271-281)
        and stay in the running batch."""
        done: list[Req] = []
        for req in batch:
            extend_end = len(req.origin_input_ids) + len(req.output_ids)
            assert len(req.kv_row) == extend_end
            req.output_ids.append(FIRST_GENERATED_TOKEN_ID + extend_end)  # greedy_token
            if req.finished():
                self.release_kv_cache(req)
                done.append(req)
            else:
                self.checkpoint(req, extend_end)
                req.prefix_len = extend_end
        return self._filter_finished(done)

    def process_batch_result_decode(self, batch: list[Req]) -> list[Req]:
        """batch_result_processor.py:1006-1046, 1459-1466: each request gets one token;
        one that is done is released (its sequence cached)."""
        done: list[Req] = []
        for req in batch:
            num_tokens = len(req.origin_input_ids) + len(req.output_ids)
            assert len(req.kv_row) == num_tokens
            req.output_ids.append(FIRST_GENERATED_TOKEN_ID + num_tokens)  # greedy_token
            if req.finished():
                self.release_kv_cache(req)
                done.append(req)
        return self._filter_finished(done)

    def _filter_finished(self, done: list[Req]) -> list[Req]:
        """The finished leave the running batch (SGLang filters them out at the start of
        the next iteration, :3948-3951, 3964-3968), which frees admission."""
        for req in done:
            self.running.remove(req)
            self.finished.append(req)
        if done:
            self.batch_is_full = False
        return done

    def run(self, max_steps: int = 10_000) -> None:
        for _ in range(max_steps):
            if not self.waiting_queue and not self.running:
                return
            self.step()
        raise RuntimeError("requests still waiting or running")

    # ---- flush_cache ----

    def running_batch_size(self) -> int:
        """``len(running_batch.reqs)`` as the next iteration's input handlers see it:
        a decode batch still holds the requests that finished in it (they are filtered
        out when the iteration merges, :3948-3968), and a prefill batch's requests are
        not merged into it yet (:3956-3958)."""
        if self.last_batch_is_prefill:
            merged = [req for req in self.last_batch if req in self.running]
            return len(self.running) - len(merged)
        return len(self.last_batch) if self.last_batch else len(self.running)

    def is_fully_idle(self) -> bool:
        """scheduler.py:5337-5360 (no chunked, disaggregated, pipelined or overlapped
        batches here): nothing running, nothing waiting, and the last iteration ran no
        batch. Right after the iteration in which the last request finished, its batch is
        still the last batch: the scheduler is idle one iteration later."""
        return not self.running and not self.last_batch and not self.waiting_queue

    def flush_cache(self) -> bool:
        """scheduler.py:5518-5547 (a ``FlushCacheReqInput`` without a timeout,
        flush_wrapper.py:29-31): when fully idle, the tree and the slot pool start
        empty and it returns True; otherwise nothing changes and it returns False."""
        if not self.is_fully_idle():
            return False
        self.last_batch = []
        self.tree_cache.reset()
        self.allocator.clear()
        return True

    # ---- finishing ----

    def checkpoint(self, req: Req, up_to: int) -> None:
        """Insert ``tokens[:up_to]`` (page-aligned) with the row's slots, free the row's
        duplicates of slots the tree already had, repoint the row at the tree's slots
        and move the lock to the new last node (``RadixCache.checkpoint``,
        radix_cache.py:510-543, and ``_insert_cache`` :450-508).

        Hit counts grow only past what this request inserted before
        (``inserted_len=cache_inserted_len``, :480-484). When the key runs past the
        prompt, the prompt's own page-aligned key is inserted again with priority
        ``priority + 1`` (:486-501, ``split_prompt``): that splits the leaf at the end
        of the prompt, so eviction can drop the outputs' KV and keep the prompt."""
        token_ids = (req.origin_input_ids + req.output_ids)[:up_to]
        key = RadixKey(token_ids, req.extra_key).page_aligned(self.page_size)
        values = req.kv_row[: len(key)]
        priority = 0  # req.priority or 0: priority scheduling is not modelled
        result = self.tree_cache.insert(
            key, values, priority=priority, inserted_len=req.cache_inserted_len
        )
        req.cache_inserted_len = max(req.cache_inserted_len, len(key))
        prompt_key = RadixKey(token_ids[: len(req.origin_input_ids)], req.extra_key).page_aligned(
            self.page_size
        )
        if 0 < len(prompt_key) < len(key):
            self.tree_cache.insert(
                prompt_key,
                values[: len(prompt_key)],
                priority=priority + 1,
                inserted_len=len(prompt_key),
            )
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

    def release_kv_cache(self, req: Req, *, checkpoint: bool = True) -> None:
        """Give the row back (mem_cache/common.py:400-444); with ``checkpoint`` the tree
        first keeps what it can key. A retracted request's KV is not cached."""
        if checkpoint:
            self.checkpoint(req, req.owned_kv_len())
        # the rest of the row, with the partial last page
        tail = req.kv_row[req.cache_protected_len :]
        self.allocator.free_segment(tail, start_pos=req.cache_protected_len)
        self.tree_cache.unlock(req.lock)
        req.lock = None
        req.kv_row = []
