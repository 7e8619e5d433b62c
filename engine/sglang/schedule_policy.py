"""Ordering the waiting queue (SGLang 0.5.23's ``managers/schedule_policy.py``).

``lpm`` (longest prefix match) sorts by the cached prefix each request would reuse,
longest first, after the in-batch prefix caching check: a request whose cached
match is short (<= ``IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD``) but which shares a
long prefix (>= ``IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD``) with a request
ahead of it in the queue goes to the back, so the first one caches the prefix for
it. ``fcfs`` (SGLang's default) keeps arrival order. With more than
``WAITING_QUEUE_PREFIX_MATCH_MAX`` waiting requests ``lpm`` falls back to ``fcfs``.
With ``fcfs`` and LRU eviction, every 32nd ordering (the first included) touches the
cached prefixes of the waiting requests, the queue's head last, so that LRU evicts them
in reverse admission order (the waiting-prefix refresh).

``PrefillAdder`` admits requests into one prefill batch (with chunked prefill off and the
plain token pool): a request goes in while its uncached tokens, its remaining output
(clipped) and one page stay strictly below the budget (``prefill_budget.PrefillBudget``),
and, after the first, while its page-ceiled extend is below the batch's input budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Protocol

from engine.sglang.allocator import KVAllocator
from engine.sglang.prefill_budget import PrefillBudget
from engine.sglang.radix_cache import RadixCache, RadixKey, TreeLock, TreeNode

# Defaults from schedule_policy.py (each overridable there by an environment variable).
IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD = 32
IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD = 32
WAITING_QUEUE_PREFIX_MATCH_MAX = 128
WAITING_PREFIX_REFRESH_INTERVAL = 32
# environ.py:645 (an environment variable there)
SGLANG_ENABLE_WAITING_PREFIX_REFRESH = True
CLIP_MAX_NEW_TOKENS = 4096


class CacheAwarePolicy(Enum):
    LPM = "lpm"


class CacheAgnosticPolicy(Enum):
    FCFS = "fcfs"


Policy = CacheAwarePolicy | CacheAgnosticPolicy


class AddReqResult(Enum):
    """schedule_policy.py:571-574."""

    CONTINUE = "continue"  # Continue to add requests
    NO_TOKEN = "no_token"  # No token left
    OTHER = "other"  # Other reasons to stop adding requests


class WaitingRequest(Protocol):
    rid: str
    origin_input_ids: list[int]
    output_ids: list[int]
    extra_key: str | None
    prefix_len: int
    num_matched_prefix_tokens: int
    last_node: TreeNode | None


def match_kv_cache(
    req: WaitingRequest, tree_cache: RadixCache, max_prefix_len: int | None = None
) -> None:
    """Match the request's tokens (at most ``max_prefix_len`` of them) and adopt the
    hit as its prefix (SGLang's ``mem_cache/common.py`` ``match_kv_cache``).
    ``num_matched_prefix_tokens``, which ``lpm`` sorts by, is capped at ``len - 1``:
    the last token is always computed (schedule_batch.py's ``_compute_max_prefix_len``)."""
    token_ids = req.origin_input_ids + req.output_ids
    if max_prefix_len is not None:
        token_ids = token_ids[:max_prefix_len]
    result = tree_cache.match_prefix(RadixKey(token_ids, req.extra_key))
    req.prefix_len = result.device_prefix_len
    req.last_node = result.last_device_node
    full_len = len(req.origin_input_ids) + len(req.output_ids)
    req.num_matched_prefix_tokens = min(req.prefix_len, full_len - 1)


class SchedulePolicy:
    def __init__(self, policy: str, tree_cache: RadixCache) -> None:
        self.policy = self._validate_and_adjust_policy(policy, tree_cache)
        self.tree_cache = tree_cache
        self._waiting_prefix_refresh_calls = 0
        # its own simulated tree, only for the in-batch prefix caching check
        self.waiting_queue_radix_tree = RadixCache()

    @staticmethod
    def _validate_and_adjust_policy(policy: str, tree_cache: RadixCache) -> Policy:
        if policy == CacheAwarePolicy.LPM.value:
            return CacheAgnosticPolicy.FCFS if tree_cache.disable else CacheAwarePolicy.LPM
        return CacheAgnosticPolicy(policy)

    def _determine_active_policy(self, waiting_queue: Sequence[WaitingRequest]) -> Policy:
        if (
            self.policy is CacheAwarePolicy.LPM
            and len(waiting_queue) > WAITING_QUEUE_PREFIX_MATCH_MAX
        ):
            return CacheAgnosticPolicy.FCFS
        return self.policy

    def calc_priority(self, waiting_queue: list[WaitingRequest]) -> Policy:
        """Reorder ``waiting_queue`` in place; returns the policy applied."""
        policy = self._determine_active_policy(waiting_queue)
        if policy is CacheAwarePolicy.LPM:
            deprioritized = self._compute_prefix_matches(waiting_queue)
            # list.sort is stable: ties keep arrival order
            waiting_queue.sort(
                key=lambda r: (
                    float("inf") if r.rid in deprioritized else -r.num_matched_prefix_tokens
                )
            )
        self._touch_waiting_prefixes(policy, waiting_queue)
        return policy

    def _touch_waiting_prefixes(
        self, policy: Policy, waiting_queue: Sequence[WaitingRequest]
    ) -> None:
        """The waiting-prefix LRU refresh (schedule_policy.py:280-302): with a
        cache-agnostic policy (``fcfs``, or ``lpm`` fallen back to it) and LRU eviction,
        on the 1st, 33rd, 65th... call, touch the cached prefix of the first 128 waiting
        requests, the queue's head last, so LRU evicts in reverse admission order.
        A touch walks the tree as a match does, so it also splits nodes."""
        if (
            isinstance(policy, CacheAwarePolicy)
            or not waiting_queue
            or not SGLANG_ENABLE_WAITING_PREFIX_REFRESH
            or self.tree_cache.eviction_policy != "lru"
            or self.tree_cache.disable
        ):
            return
        refresh = self._waiting_prefix_refresh_calls % WAITING_PREFIX_REFRESH_INTERVAL == 0
        self._waiting_prefix_refresh_calls += 1
        if not refresh:
            return
        for r in reversed(waiting_queue[:WAITING_QUEUE_PREFIX_MATCH_MAX]):
            # touch_waiting_prefix (mem_cache/common.py:215-218): the whole sequence
            self.tree_cache.touch_prefix(RadixKey(r.origin_input_ids + r.output_ids, r.extra_key))

    def _compute_prefix_matches(self, waiting_queue: Sequence[WaitingRequest]) -> set[str]:
        deprioritized: set[str] = set()
        self.waiting_queue_radix_tree.reset()
        for r in waiting_queue:
            prefix_ids = r.origin_input_ids + r.output_ids
            match_kv_cache(r, self.tree_cache)
            if r.prefix_len <= IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD:
                key = RadixKey(prefix_ids, r.extra_key)
                in_batch = self.waiting_queue_radix_tree.match_prefix(key)
                if in_batch.device_prefix_len >= IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD:
                    deprioritized.add(r.rid)
                else:
                    self.waiting_queue_radix_tree.insert(key, [0] * len(prefix_ids))
        return deprioritized


def fits_an_empty_pool(num_tokens: int, max_new_tokens: int, page_size: int, size: int) -> bool:
    """Whether ``PrefillAdder`` admits a request of ``num_tokens`` (prompt and outputs so
    far) into a pool of ``size`` slots holding nothing else but evictable or its own
    cached prefix: ``extend + max_new + page_size < remaining_total``, where a cached
    prefix leaves ``extend`` and ``remaining_total`` alike (schedule_policy.py:1405-1412,
    prefill_budget.py:114-130). One that does not is never admitted."""
    return num_tokens + min(max_new_tokens, CLIP_MAX_NEW_TOKENS) + page_size < size


class AdmittedRequest(WaitingRequest, Protocol):
    max_new_tokens: int  # SGLang's sampling_params.max_new_tokens
    lock: TreeLock | None


class PrefillAdder:
    """One prefill batch's admission (schedule_policy.py:607-1705, the paths taken with
    default server args: no chunked prefill, no ignore_eos, no SWA/Mamba/HiCache, no
    LoRA, no priority preemption)."""

    def __init__(
        self,
        page_size: int,
        tree_cache: RadixCache,
        token_to_kv_pool_allocator: KVAllocator,
        running_reqs: Sequence[AdmittedRequest],
        new_token_ratio: float,
        rem_input_tokens: int,
    ) -> None:
        self.page_size = page_size
        self.tree_cache = tree_cache
        self.new_token_ratio = new_token_ratio
        self.rem_input_tokens = rem_input_tokens
        self.memory_budget = PrefillBudget(token_to_kv_pool_allocator, tree_cache)
        self.can_run_list: list[AdmittedRequest] = []
        # the running requests' expected outputs (schedule_policy.py:670-677)
        self.memory_budget.total_offset += sum(
            self._get_running_request_total_token_offset(r) for r in running_reqs
        )
        # one page per request for page alignment (schedule_policy.py:733-737)
        self.per_req_token_overhead = self.page_size

    def _get_running_request_total_token_offset(self, req: AdmittedRequest) -> float:
        """schedule_policy.py:785-794 (no ignore_eos: always the ratio)."""
        remaining = min(req.max_new_tokens - len(req.output_ids), CLIP_MAX_NEW_TOKENS)
        return remaining * self.new_token_ratio

    @property
    def rem_total_tokens(self) -> float:
        return self.memory_budget.remaining_total

    def ceil_paged_tokens(self, tokens: int) -> int:
        return -(-tokens // self.page_size) * self.page_size

    def budget_state(self) -> AddReqResult:
        """schedule_policy.py:874-893."""
        if not self.memory_budget.has_capacity():
            return AddReqResult.NO_TOKEN
        if self.rem_input_tokens <= 0:
            return AddReqResult.OTHER
        return AddReqResult.CONTINUE

    def add_one_req(self, req: AdmittedRequest) -> AddReqResult:
        """schedule_policy.py:1395-1590. ``req`` has been matched (its prefix_len and
        last_node). Returns what the *next* candidate should do."""
        full_len = len(req.origin_input_ids) + len(req.output_ids)
        # the remaining output, clipped (:1405-1410)
        max_new = min(max(req.max_new_tokens - len(req.output_ids), 0), CLIP_MAX_NEW_TOKENS)
        cand_extend_input_len = full_len - req.prefix_len
        total_tokens = cand_extend_input_len + max_new + self.per_req_token_overhead  # :1412
        assert req.last_node is not None
        # the prefix is pinned while the request is sized, so it is not counted as
        # evictable (:1431, _lock_node :1225-1239)
        pin = self.tree_cache.lock(req.last_node)
        try:
            # _select_prefill_admission (:1592-1683)
            extend_len = full_len - req.prefix_len
            input_tokens = self.ceil_paged_tokens(extend_len)
            if not self.memory_budget.check_prefill(total_tokens):
                return AddReqResult.NO_TOKEN
            # without chunking, the first request goes in even above the input cap (:1628-1634)
            if self.can_run_list and input_tokens >= self.rem_input_tokens:
                return AddReqResult.OTHER
            # the whole output, clipped (not what is left of it) (:1636)
            max_new_tokens = min(req.max_new_tokens, CLIP_MAX_NEW_TOKENS)
            # _commit_prefill_admission (:1685-1705)
            req.lock = self.tree_cache.lock(req.last_node)
            self.can_run_list.append(req)
            self._update_prefill_budget(extend_len, max_new_tokens)
        finally:
            self.tree_cache.unlock(pin)
        # this verdict is for the next candidate (:1589-1590)
        return self.budget_state()

    def _update_prefill_budget(self, extend_input_len: int, max_new_tokens: int) -> None:
        """schedule_policy.py:895-952: the KV budget takes the page-ceiled extend, one
        page (per_req_token_overhead) and the output; the input budget the ceiled extend."""
        extend_input_len = self.ceil_paged_tokens(extend_input_len)
        self.memory_budget.reserve(
            extend_input_len,
            max_new_tokens,
            extra_tokens=self.per_req_token_overhead - self.page_size,
        )
        self.rem_input_tokens -= extend_input_len
