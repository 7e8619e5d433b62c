"""Per-request block bookkeeping on top of the pool (vLLM's ``v1/core/kv_cache_manager.py``).

vLLM splits this over a manager, a coordinator and one single-type manager per
KV-cache group. The simulator has one group of full-attention layers, so the
three collapse into this class; the method names are vLLM's.

``KVCacheManager.reset_prefix_cache`` is vLLM 0.33.0's, as released: default and
preempt modes run it. ``KeepModeKVCacheManager`` is keep mode's proposed change
(not in vLLM 0.33.0): it passes ``allow_used_blocks`` down to its pool's
proposed reset (``KeepModeBlockPool``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.vllm.block_pool import BlockPool, KeepModeBlockPool
from engine.vllm.kv_cache_utils import BlockHash, KVCacheBlock
from engine.vllm.kv_events import KVCacheEvent
from engine.vllm.metrics import PrefixCacheStats
from engine.vllm.request import Request, RequestStatus


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class KVCacheBlocks:
    """Blocks handed to the scheduler, one list per KV-cache group (here: one)."""

    blocks: tuple[list[KVCacheBlock], ...] = field(default_factory=lambda: ([],))

    def get_block_ids(self) -> tuple[list[int], ...]:
        return tuple([block.block_id for block in group] for group in self.blocks)


class KVCacheManager:
    """Finds cache hits, allocates and frees the blocks of each request."""

    # The pool this manager builds (keep mode's manager builds keep mode's pool).
    block_pool_class: type[BlockPool] = BlockPool

    def __init__(
        self,
        num_gpu_blocks: int,
        block_size: int,
        enable_caching: bool = True,
        enable_kv_cache_events: bool = True,
        log_stats: bool = True,
        use_int_block_hashes: bool = True,
        watermark: float = 0.0,
    ) -> None:
        self.block_size = block_size
        self.enable_caching = enable_caching
        self.block_pool = self.block_pool_class(
            num_gpu_blocks,
            enable_caching,
            hash_block_size=block_size,
            enable_kv_cache_events=enable_kv_cache_events,
            use_int_block_hashes=use_int_block_hashes,
        )
        self.kv_cache_group_id = 0
        self.req_to_blocks: dict[str, list[KVCacheBlock]] = {}
        # How many of a request's leading blocks are already in the hash map.
        self.num_cached_block: dict[str, int] = {}
        self.log_stats = log_stats
        self.prefix_cache_stats: PrefixCacheStats | None = PrefixCacheStats() if log_stats else None
        # Blocks kept free when a waiting request is admitted, so that the
        # requests already running have room to grow (a fraction of the pool,
        # rounded down; the null block counts).
        assert watermark >= 0.0, "watermark must be non-negative"
        self.watermark_blocks = int(watermark * num_gpu_blocks)

    @property
    def usage(self) -> float:
        return self.block_pool.get_usage()

    def make_prefix_cache_stats(self) -> PrefixCacheStats | None:
        """Hand out the counters since the last call and start new ones."""
        if not self.log_stats:
            return None
        stats, self.prefix_cache_stats = self.prefix_cache_stats, PrefixCacheStats()
        return stats

    def prefix_cache_lookup_enabled(self, request: Request) -> bool:
        return self.enable_caching and not request.skip_reading_prefix_cache

    def get_computed_blocks(self, request: Request) -> tuple[KVCacheBlocks, int]:
        """The request's longest cached prefix: its blocks and how many tokens they hold.

        Touches nothing: the hit is only taken by ``allocate_slots``.
        """
        if not self.prefix_cache_lookup_enabled(request):
            return KVCacheBlocks(), 0
        # When every token hits, the last one must still be computed to get
        # logits, so at most num_tokens - 1 tokens may come from the cache. A
        # hit is whole blocks, so a prompt of exactly k full blocks hits k - 1.
        max_cache_hit_length = request.num_tokens - 1
        computed_blocks = self.find_longest_cache_hit(request.block_hashes, max_cache_hit_length)
        return KVCacheBlocks((computed_blocks,)), len(computed_blocks) * self.block_size

    def find_longest_cache_hit(
        self, block_hashes: Sequence[BlockHash], max_length: int
    ) -> list[KVCacheBlock]:
        """Walk the hashes from block 0 and stop at the first miss.

        Hashes are chained, so once one block misses every later one would too.
        """
        computed_blocks: list[KVCacheBlock] = []
        for block_hash in itertools.islice(block_hashes, max_length // self.block_size):
            cached_block = self.block_pool.get_cached_block(block_hash, [self.kv_cache_group_id])
            if not cached_block:
                break
            computed_blocks.append(cached_block[0])
        return computed_blocks

    def record_prefix_cache_stats(self, request: Request, num_hit_tokens: int) -> None:
        """Count one admission; requests that skipped the lookup are left out."""
        if self.prefix_cache_stats is None or not self.prefix_cache_lookup_enabled(request):
            return
        self.prefix_cache_stats.record(
            num_tokens=request.num_tokens,
            num_hits=num_hit_tokens,
            preempted=request.num_preemptions > 0,
        )

    def get_num_blocks_to_allocate(
        self, request_id: str, num_tokens: int, new_computed_blocks: Sequence[KVCacheBlock]
    ) -> int:
        """Free blocks this allocation would consume: new blocks plus free cache hits."""
        num_required_blocks = cdiv(num_tokens, self.block_size)
        num_held = len(self.req_to_blocks.get(request_id, ()))
        num_new_blocks = max(0, num_required_blocks - len(new_computed_blocks) - num_held)
        # A hit on a free block takes it out of the free queue too.
        num_evictable_computed_blocks = sum(
            1 for block in new_computed_blocks if block.ref_cnt == 0 and not block.is_null
        )
        return num_new_blocks + num_evictable_computed_blocks

    def allocate_slots(
        self,
        request: Request,
        num_new_tokens: int,
        num_new_computed_tokens: int = 0,
        new_computed_blocks: KVCacheBlocks | None = None,
        full_sequence_must_fit: bool = False,
        has_scheduled_reqs: bool = True,
    ) -> KVCacheBlocks | None:
        """Give the request room for ``num_new_tokens`` more tokens, after taking its
        cache hits. Returns the new blocks, or None (and changes nothing) when the
        pool is short. Blocks that become full are cached.

        ``full_sequence_must_fit`` (admission): refuse unless the free blocks hold
        the request's whole current sequence, not just this chunk.
        ``has_scheduled_reqs``: another request is running, so a waiting request
        must also leave the watermark free.
        """
        if num_new_tokens == 0:
            raise ValueError("num_new_tokens must be greater than 0")
        hit_blocks = new_computed_blocks.blocks[0] if new_computed_blocks else []
        num_computed_tokens = request.num_computed_tokens + num_new_computed_tokens

        watermark_blocks = 0
        if has_scheduled_reqs and request.status in (
            RequestStatus.WAITING,
            RequestStatus.PREEMPTED,
        ):
            watermark_blocks = self.watermark_blocks

        if full_sequence_must_fit:
            # The whole sequence so far (prompt, and output if it was preempted),
            # counting the hits it takes. max_model_len is not modelled: every
            # sequence is shorter than the model's limit.
            full_num_tokens = request.num_tokens
            num_blocks_to_allocate = self.get_num_blocks_to_allocate(
                request.request_id, full_num_tokens, hit_blocks
            )
            if num_blocks_to_allocate + watermark_blocks > self.block_pool.get_num_free_blocks():
                return None

        num_tokens_need_slot = num_computed_tokens + num_new_tokens
        num_blocks_to_allocate = self.get_num_blocks_to_allocate(
            request.request_id, num_tokens_need_slot, hit_blocks
        )
        if num_blocks_to_allocate + watermark_blocks > self.block_pool.get_num_free_blocks():
            return None

        if self.enable_caching:
            self.block_pool.touch(hit_blocks)
        self.save_new_computed_blocks(request.request_id, hit_blocks)
        new_blocks = self.allocate_new_blocks(request.request_id, num_tokens_need_slot)

        if self.enable_caching:
            num_tokens_to_cache = min(num_computed_tokens + num_new_tokens, request.num_tokens)
            self.cache_blocks(request, num_tokens_to_cache)
        return KVCacheBlocks((new_blocks,))

    def save_new_computed_blocks(
        self, request_id: str, new_computed_blocks: Sequence[KVCacheBlock]
    ) -> None:
        if request_id not in self.num_cached_block:
            # A new (or re-admitted) request: its hits are already in the map.
            req_blocks = self.req_to_blocks.setdefault(request_id, [])
            assert not req_blocks
            req_blocks.extend(new_computed_blocks)
            self.num_cached_block[request_id] = len(new_computed_blocks)
        else:
            assert not new_computed_blocks, "a running request cannot take new cache hits"

    def allocate_new_blocks(self, request_id: str, num_tokens: int) -> list[KVCacheBlock]:
        req_blocks = self.req_to_blocks.setdefault(request_id, [])
        num_new_blocks = cdiv(num_tokens, self.block_size) - len(req_blocks)
        if num_new_blocks <= 0:
            return []
        new_blocks = self.block_pool.get_new_blocks(num_new_blocks)
        req_blocks.extend(new_blocks)
        return new_blocks

    def cache_blocks(self, request: Request, num_tokens: int) -> None:
        """Cache the request's blocks that ``num_tokens`` computed tokens fill."""
        num_cached_blocks = self.num_cached_block.get(request.request_id, 0)
        num_full_blocks = num_tokens // self.block_size
        if num_cached_blocks >= num_full_blocks:
            return
        self.block_pool.cache_full_blocks(
            request=request,
            blocks=self.req_to_blocks[request.request_id],
            num_cached_blocks=num_cached_blocks,
            num_full_blocks=num_full_blocks,
            block_size=self.block_size,
            kv_cache_group_id=self.kv_cache_group_id,
        )
        self.num_cached_block[request.request_id] = num_full_blocks

    def free(self, request: Request) -> None:
        """Release the request's blocks, last block first, so that deeper blocks
        of its chain are evicted before the shared-looking head."""
        blocks = self.req_to_blocks.pop(request.request_id, [])
        self.block_pool.free_blocks(reversed(blocks))
        self.num_cached_block.pop(request.request_id, None)

    def reset_prefix_cache(self) -> bool:
        """Forget the whole prefix cache; True on success, False while blocks are held."""
        # vLLM's coordinator resets each distinct pool; here there is one.
        if not self.block_pool.reset_prefix_cache():
            return False
        if self.log_stats:
            assert self.prefix_cache_stats is not None
            self.prefix_cache_stats.reset = True
        return True

    def get_block_ids(self, request_id: str) -> tuple[list[int], ...]:
        return KVCacheBlocks((self.req_to_blocks.get(request_id, []),)).get_block_ids()

    def take_events(self) -> list[KVCacheEvent]:
        return self.block_pool.take_events()


class KeepModeKVCacheManager(KVCacheManager):
    """vLLM 0.33.0's manager with the reset that keep mode needs: the change
    proposed in the write-up, not in vLLM 0.33.0."""

    block_pool_class = KeepModeBlockPool
    block_pool: KeepModeBlockPool

    def reset_prefix_cache(self, allow_used_blocks: bool = False) -> bool:
        """Forget the whole prefix cache; True on success, False while blocks are held
        (unless ``allow_used_blocks``: keep mode, whose reset always succeeds)."""
        # vLLM's coordinator resets each distinct pool; here there is one.
        if not self.block_pool.reset_prefix_cache(allow_used_blocks):
            return False
        if self.log_stats:
            assert self.prefix_cache_stats is not None
            self.prefix_cache_stats.reset = True
        return True
