"""The KV budget of one prefill batch (SGLang 0.5.23's ``mem_cache/prefill_budget.py``
``PrefillBudget``, the plain token pool's: no SWA, no Mamba, no load-back).

What is left is the free slots plus the tree's evictable tokens, less two offsets:
``total_offset`` (the running requests' expected outputs, then each admitted request's
page-ceiled extend, one page and its clipped ``max_new_tokens``) and
``current_offset`` (the admitted requests' page-ceiled extends and pages only). Nothing
is allocated while a batch is admitted: the offsets stand for it.
"""

from __future__ import annotations

from engine.sglang.allocator import KVAllocator
from engine.sglang.radix_cache import RadixCache


class PrefillBudget:
    def __init__(self, allocator: KVAllocator, tree_cache: RadixCache) -> None:
        self.allocator = allocator
        self.tree_cache = tree_cache
        self.page_size = allocator.page_size
        # floats: the running requests' offsets are scaled by new_token_ratio
        self.total_offset: float = 0
        self.current_offset: float = 0

    def ceil_paged_tokens(self, tokens: int) -> int:
        return -(-tokens // self.page_size) * self.page_size

    def _available_and_evictable(self) -> int:
        return self.allocator.available_size() + self.tree_cache.evictable_size()

    @property
    def remaining_total(self) -> float:
        return self._available_and_evictable() - self.total_offset

    @property
    def remaining_current(self) -> float:
        return self._available_and_evictable() - self.current_offset

    def has_capacity(self) -> bool:
        """prefill_budget.py:111-112."""
        return self.remaining_total > 0 and self.remaining_current > 0

    def check_prefill(self, total_tokens: int) -> bool:
        """prefill_budget.py:114-130: strictly below what is left."""
        return total_tokens < self.remaining_total

    def reserve(self, extend_input_len: int, max_new_tokens: int, extra_tokens: int = 0) -> None:
        """prefill_budget.py:156-168: the page-ceiled extend and one page now, the
        output later."""
        extend_input_len = self.ceil_paged_tokens(extend_input_len)
        immediate = extend_input_len + self.page_size + extra_tokens
        self.total_offset += immediate + max_new_tokens
        self.current_offset += immediate
