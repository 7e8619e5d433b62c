# ruff: noqa: F821  (a fragment: the names live in engine/block_pool.py)
"""BlockPool.reset_prefix_cache as released (vLLM 0.33.0), before the keep-mode change.

Only the code panel reads this file, as text: in keep mode it shows the engine's
function as a diff against this one. The body is the engine's, so the diff holds
exactly the change: the signature, the guard and the docstring that explains it.
"""


class BlockPool:
    def reset_prefix_cache(self) -> bool:
        """Forget every cached hash. Refused while any block is held.
        Ref counts and the free queue order never change."""
        num_used_blocks = self.num_gpu_blocks - self.get_num_free_blocks()
        if num_used_blocks != 1:  # The null block is always marked as used
            logger.warning(
                "Failed to reset prefix cache because some blocks (%d) are not freed yet",
                num_used_blocks - 1,
            )
            return False

        # Remove all hashes so that no new blocks will hit.
        self.cached_block_hash_to_block = BlockHashToBlockMap()
        # Remove all hashes from all blocks, held ones included.
        for block in self.blocks:
            block.reset_hash()

        logger.info("Successfully reset prefix cache")
        if self.enable_kv_cache_events:
            self.kv_event_queue.append(AllBlocksCleared())
        return True
