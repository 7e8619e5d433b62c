"""The pool of KV-cache blocks and the prefix cache over it (vLLM's ``v1/core/block_pool.py``).

``BlockPool.reset_prefix_cache`` is vLLM 0.33.0's, as released: default and
preempt modes run it. ``KeepModeBlockPool`` overrides only that method with
keep mode's proposed change (not in vLLM 0.33.0); keep mode's KV-cache manager
(``KeepModeKVCacheManager``) builds one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from engine.vllm.kv_cache_utils import (
    BlockHash,
    BlockHashWithGroupId,
    ExternalBlockHash,
    FreeKVCacheBlockQueue,
    KVCacheBlock,
    generate_block_hash_extra_keys,
    make_block_hash_with_group_id,
    maybe_convert_block_hash,
    to_event_extra_keys,
)
from engine.vllm.kv_events import (
    MEDIUM_GPU,
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    KVCacheEvent,
)
from engine.vllm.logger import init_logger

if TYPE_CHECKING:
    from engine.vllm.request import Request

logger = init_logger("vllm.v1.core.block_pool")


class BlockHashToBlockMap:
    """Hash key -> cached block(s).

    There is no de-duplication: when a second block is cached under a key that
    is already present, both stay, and lookups return the first one inserted.
    """

    def __init__(self) -> None:
        self._cache: dict[BlockHashWithGroupId, KVCacheBlock | dict[int, KVCacheBlock]] = {}

    def get_one_block(self, key: BlockHashWithGroupId) -> KVCacheBlock | None:
        blocks = self._cache.get(key)
        if blocks is None or isinstance(blocks, KVCacheBlock):
            return blocks
        return next(iter(blocks.values()))

    def insert(self, key: BlockHashWithGroupId, block: KVCacheBlock) -> None:
        blocks = self._cache.get(key)
        if blocks is None:
            self._cache[key] = block
        elif isinstance(blocks, KVCacheBlock):
            self._cache[key] = {blocks.block_id: blocks, block.block_id: block}
        else:
            blocks[block.block_id] = block

    def pop(self, key: BlockHashWithGroupId, block_id: int) -> KVCacheBlock | None:
        """Remove only ``block_id``'s entry under ``key``; other blocks under it stay.

        The key is popped and put back, so a surviving key moves to the end of
        the map's iteration order, as in vLLM.
        """
        blocks = self._cache.pop(key, None)
        if blocks is None:
            return None
        if isinstance(blocks, KVCacheBlock):
            if blocks.block_id == block_id:
                return blocks
            self._cache[key] = blocks
            return None
        block = blocks.pop(block_id, None)
        if blocks:
            self._cache[key] = blocks
        return block

    def items(self) -> list[tuple[BlockHashWithGroupId, list[KVCacheBlock]]]:
        """Every key with its blocks, in the map's own order (first inserted block first)."""
        return [
            (key, [blocks] if isinstance(blocks, KVCacheBlock) else list(blocks.values()))
            for key, blocks in self._cache.items()
        ]

    def __len__(self) -> int:
        return len(self._cache)


class BlockPool:
    """All KV-cache blocks of one GPU: allocation, freeing, caching and eviction.

    Block 0 is the null block: taken out of the free queue at start and never
    returned, so it always counts as used.
    """

    def __init__(
        self,
        num_gpu_blocks: int,
        enable_caching: bool,
        hash_block_size: int,
        enable_kv_cache_events: bool = False,
        metrics_collector: None = None,
        num_hash_lookahead_tokens: int = 0,
        medium: str = MEDIUM_GPU,
        *,
        use_int_block_hashes: bool = True,
    ) -> None:
        assert isinstance(num_gpu_blocks, int) and num_gpu_blocks > 0
        # vLLM's own parameters, in its order, so a call written for vLLM's pool
        # builds this one. Not modelled: block-residency metrics and hashes that
        # look ahead past their block (both off by default in vLLM).
        assert metrics_collector is None, "block-residency metrics are not modelled"
        assert num_hash_lookahead_tokens == 0, "look-ahead block hashes are not modelled"
        self.num_gpu_blocks = num_gpu_blocks
        self.medium = medium
        self.enable_caching = enable_caching
        # With one KV-cache group the hashing granularity equals the block size,
        # which cache_full_blocks receives per call.
        self.hash_block_size = hash_block_size
        self.blocks = [KVCacheBlock(block_id) for block_id in range(num_gpu_blocks)]
        self.free_block_queue = FreeKVCacheBlockQueue(self.blocks)
        self.cached_block_hash_to_block = BlockHashToBlockMap()
        self.null_block = self.free_block_queue.popleft()
        self.null_block.is_null = True
        self.enable_kv_cache_events = enable_kv_cache_events
        # vLLM sends int hashes unless VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0.
        self.use_int_block_hashes = use_int_block_hashes
        self.kv_event_queue: list[KVCacheEvent] = []

    def _external_hash(self, block_hash: BlockHash) -> ExternalBlockHash:
        return maybe_convert_block_hash(block_hash, self.use_int_block_hashes)

    def get_cached_block(
        self, block_hash: BlockHash, kv_cache_group_ids: Sequence[int] = (0,)
    ) -> list[KVCacheBlock] | None:
        """The cached block of each group, or None if any group misses.

        Whether the block is free or in use does not matter here.
        """
        cached_blocks = []
        for group_id in kv_cache_group_ids:
            key = make_block_hash_with_group_id(block_hash, group_id)
            block = self.cached_block_hash_to_block.get_one_block(key)
            if block is None:
                return None
            cached_blocks.append(block)
        return cached_blocks

    def cache_full_blocks(
        self,
        request: Request,
        blocks: Sequence[KVCacheBlock],
        num_cached_blocks: int,
        num_full_blocks: int,
        block_size: int,
        kv_cache_group_id: int = 0,
    ) -> None:
        """Put the request's newly full blocks ``[num_cached_blocks, num_full_blocks)``
        under their hashes. Ref counts and queue positions are not touched."""
        if num_cached_blocks >= num_full_blocks:
            return
        new_full_blocks = blocks[num_cached_blocks:num_full_blocks]
        new_block_hashes = request.block_hashes[num_cached_blocks:num_full_blocks]
        assert len(new_block_hashes) == len(new_full_blocks), "request has too few block hashes"
        # What the BlockStored event carries; nothing to collect with events off.
        stored_hashes: list[ExternalBlockHash] | None = [] if self.enable_kv_cache_events else None
        for block, block_hash in zip(new_full_blocks, new_block_hashes, strict=True):
            if block.is_null:
                continue
            key = make_block_hash_with_group_id(block_hash, kv_cache_group_id)
            block.set_block_hash(key)
            self.cached_block_hash_to_block.insert(key, block)
            if stored_hashes is not None:
                stored_hashes.append(self._external_hash(block_hash))

        if stored_hashes is not None:
            parent_block_hash = (
                self._external_hash(request.block_hashes[num_cached_blocks - 1])
                if num_cached_blocks > 0
                else None
            )
            start, end = num_cached_blocks * block_size, num_full_blocks * block_size
            # One entry per stored block; the multimodal index carries from block to block.
            extra_keys_list: list[tuple[Any, ...] | None] = []
            curr_mm_idx = 0
            for i in range(num_cached_blocks, num_full_blocks):
                extra_keys, curr_mm_idx = generate_block_hash_extra_keys(
                    request, i * block_size, (i + 1) * block_size, curr_mm_idx
                )
                extra_keys_list.append(extra_keys)
            self.kv_event_queue.append(
                BlockStored(
                    block_hashes=tuple(stored_hashes),
                    parent_block_hash=parent_block_hash,
                    token_ids=tuple(request.all_token_ids[start:end]),
                    block_size=block_size,
                    lora_id=request.lora_int_id,
                    medium=self.medium,
                    lora_name=request.lora_name,
                    extra_keys=to_event_extra_keys(extra_keys_list),
                    group_idx=kv_cache_group_id,
                )
            )

    def get_new_blocks(self, num_blocks: int) -> list[KVCacheBlock]:
        """Take ``num_blocks`` from the head of the free queue, evicting their cached hashes."""
        if num_blocks > self.get_num_free_blocks():
            raise ValueError(f"Cannot get {num_blocks} free blocks from the pool")
        ret = self.free_block_queue.popleft_n(num_blocks)
        for block in ret:
            if self.enable_caching:
                self._maybe_evict_cached_block(block)
            assert block.ref_cnt == 0
            block.ref_cnt += 1
        return ret

    def _maybe_evict_cached_block(self, block: KVCacheBlock) -> bool:
        """Drop the block's hash from the map (other blocks under that key stay).

        Returns True if the block was cached. Emits one BlockRemoved per removed key.
        """
        key = block.block_hash
        if key is None:
            return False
        removed = self.cached_block_hash_to_block.pop(key, block.block_id)
        block.reset_hash()
        if removed is None:
            return False
        if self.enable_kv_cache_events:
            self.kv_event_queue.append(
                BlockRemoved(
                    block_hashes=(self._external_hash(BlockHash(key[:-4])),),
                    medium=self.medium,
                    group_idx=int.from_bytes(key[-4:], "big"),
                )
            )
        return True

    def touch(self, blocks: Iterable[KVCacheBlock]) -> None:
        """Take a reference on cache hits; a free hit leaves the free queue."""
        for block in blocks:
            if block.is_null:
                continue
            if block.ref_cnt == 0:
                self.free_block_queue.remove(block)
            block.ref_cnt += 1

    def free_blocks(self, ordered_blocks: Iterable[KVCacheBlock]) -> None:
        """Drop one reference on each block; the first given is evicted first.

        Blocks that reach ref_cnt 0 go back to the free queue, order kept:
        blocks without a hash (never hit) at the head, cached ones at the tail.
        There is no underflow check, as in vLLM: a double free drives ref_cnt to -1.
        """
        blocks_to_evict_first: list[KVCacheBlock] = []
        blocks_to_evict_last: list[KVCacheBlock] = []
        for block in ordered_blocks:
            if block.is_null:
                continue
            block.ref_cnt -= 1
            if block.ref_cnt != 0:
                continue
            if block.block_hash is None or not self.enable_caching:
                blocks_to_evict_first.append(block)
            else:
                blocks_to_evict_last.append(block)
        self.free_block_queue.prepend_n(blocks_to_evict_first)
        self.free_block_queue.append_n(blocks_to_evict_last)

    def evict_blocks(self, block_ids: Iterable[int]) -> None:
        """Drop these blocks from the prefix cache; held blocks stay allocated, unhashed."""
        for block_id in block_ids:
            assert block_id < len(self.blocks), (
                f"Invalid block_id {block_id} >= {len(self.blocks)}. "
                "This indicates a bug in the KV connector: workers should only "
                "report block IDs that were allocated by the scheduler."
            )
            self._maybe_evict_cached_block(self.blocks[block_id])

    def reset_prefix_cache(self) -> bool:
        """Forget the whole prefix cache: RLHF flows use it once new weights make
        every cached block stale, benchmarks to start from a cold cache.

        Returns True on success, False (and changes nothing) while any block
        but the null block is in use.
        """
        num_used_blocks = self.num_gpu_blocks - self.get_num_free_blocks()
        if num_used_blocks != 1:  # The null block is always marked as used
            logger.warning(
                "Failed to reset prefix cache because some blocks (%d) are not freed yet",
                num_used_blocks - 1,
            )
            return False

        # Drop every hash key, so that no request can hit from now on.
        self.cached_block_hash_to_block = BlockHashToBlockMap()
        # Not modelled here: vLLM also clears its index of partial-block hashes
        # (cached_block_hashes_by_block) and notifies its reuse watchers.

        # Drop the hash of every block.
        for block in self.blocks:
            block.reset_hash()

        # Not modelled here: vLLM also resets its metrics collector.
        logger.info("Successfully reset prefix cache")

        if self.enable_kv_cache_events:
            self.kv_event_queue.append(AllBlocksCleared())

        return True

    def get_num_free_blocks(self) -> int:
        return self.free_block_queue.num_free_blocks

    def get_usage(self) -> float:
        """Fraction of the usable blocks (all but the null block) that are held."""
        total_gpu_blocks = self.num_gpu_blocks - 1
        if not total_gpu_blocks:
            return 0.0
        return 1.0 - (self.get_num_free_blocks() / total_gpu_blocks)

    def take_events(self) -> list[KVCacheEvent]:
        if not self.enable_kv_cache_events:
            return []
        events, self.kv_event_queue = self.kv_event_queue, []
        return events


class KeepModeBlockPool(BlockPool):
    """vLLM 0.33.0's BlockPool with the reset that keep mode needs: the change
    proposed in the write-up, not in vLLM 0.33.0."""

    def reset_prefix_cache(self, allow_used_blocks: bool = False) -> bool:
        """Forget the whole prefix cache: RLHF flows use it once new weights make
        every cached block stale, benchmarks to start from a cold cache.

        Returns True on success, False (and changes nothing) while any block
        but the null block is in use, unless ``allow_used_blocks`` (keep mode):
        then blocks in use stay allocated to their requests and only lose their
        hashes. Ref counts and the free queue order never change.
        """
        num_used_blocks = self.num_gpu_blocks - self.get_num_free_blocks()
        # The null block is always marked as used
        if num_used_blocks != 1 and not allow_used_blocks:
            logger.warning(
                "Failed to reset prefix cache because some blocks (%d) are not freed yet",
                num_used_blocks - 1,
            )
            return False

        # Drop every hash key, so that no request can hit from now on.
        self.cached_block_hash_to_block = BlockHashToBlockMap()
        # Not modelled here: vLLM also clears its index of partial-block hashes
        # (cached_block_hashes_by_block) and notifies its reuse watchers.

        # Drop the hash of every block, held ones included.
        for block in self.blocks:
            block.reset_hash()

        # Not modelled here: vLLM also resets its metrics collector.
        logger.info("Successfully reset prefix cache")

        if self.enable_kv_cache_events:
            self.kv_event_queue.append(AllBlocksCleared())

        return True
