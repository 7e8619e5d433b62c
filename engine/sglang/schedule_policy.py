"""Ordering the waiting queue (SGLang 0.5.23's ``managers/schedule_policy.py``).

``lpm`` (longest prefix match) sorts by the cached prefix each request would reuse,
longest first, after the in-batch prefix caching check: a request whose cached
match is short (<= ``IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD``) but which shares a
long prefix (>= ``IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD``) with a request
ahead of it in the queue goes to the back, so the first one caches the prefix for
it. ``fcfs`` (SGLang's default) keeps arrival order. With more than
``WAITING_QUEUE_PREFIX_MATCH_MAX`` waiting requests ``lpm`` falls back to ``fcfs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Protocol

from engine.sglang.radix_cache import RadixCache, RadixKey, TreeNode

# Defaults from schedule_policy.py (each overridable there by an environment variable).
IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD = 32
IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD = 32
WAITING_QUEUE_PREFIX_MATCH_MAX = 128
CLIP_MAX_NEW_TOKENS = 4096


class CacheAwarePolicy(Enum):
    LPM = "lpm"


class CacheAgnosticPolicy(Enum):
    FCFS = "fcfs"


Policy = CacheAwarePolicy | CacheAgnosticPolicy


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
        return policy

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
