"""The token-to-KV slot pool (SGLang's ``mem_cache/allocator/token.py`` and ``paged.py``).

Slot 0 is the padded slot SGLang keeps for dummy writes: the free list starts at 1
and holds ``size`` slots. Without ``need_sort`` (SGLang's default outside
prefill/decode disaggregation) a page-size-1 pool appends freed slots to the END of
its free list, while a paged pool puts freed pages at the FRONT; with ``need_sort``
both stage frees and merge them, sorted, only when an allocation runs short.
"""

from __future__ import annotations

from collections.abc import Sequence


class TokenToKVPoolAllocator:
    """Page size 1: a free list of slot indices; ``alloc`` takes from its front."""

    page_size = 1

    def __init__(self, size: int, need_sort: bool = False) -> None:
        assert size > 0
        self.size = size
        self.need_sort = need_sort
        self.clear()

    def clear(self) -> None:
        # SGLang's free_pages is self._slots[self._head:]: alloc moves the head
        # instead of deleting from the list's front, which moves all the rest
        # (speed only; the same slots in the same order).
        self._slots: list[int] = list(range(1, self.size + 1))
        self._head = 0
        self.release_pages: list[int] = []

    @property
    def free_pages(self) -> list[int]:
        return self._slots[self._head :]

    def _num_free(self) -> int:
        return len(self._slots) - self._head

    def available_size(self) -> int:
        return self._num_free() + len(self.release_pages)

    def merge_and_sort_free(self) -> None:
        if self.release_pages:
            self._slots = sorted(self.free_pages + self.release_pages)
            self._head = 0
            self.release_pages = []

    def alloc(self, need_size: int) -> list[int] | None:
        """``need_size`` slots from the front of the free list, or None if short."""
        if self.need_sort and need_size > self._num_free():
            self.merge_and_sort_free()
        if need_size > self._num_free():
            return None
        head = self._head
        select_index = self._slots[head : head + need_size]
        self._head = head + need_size
        if self._head > 4096 and 2 * self._head > len(self._slots):
            del self._slots[: self._head]  # now and then, not on every alloc
            self._head = 0
        return select_index

    def free(self, free_index: Sequence[int]) -> None:
        if not free_index:
            return
        if self.need_sort:
            self.release_pages.extend(free_index)
        else:
            self._slots.extend(free_index)

    def free_segment(self, free_index: Sequence[int], *, start_pos: int) -> None:
        """Free ``kv_row[start_pos : start_pos + len(free_index)]`` of one request."""
        assert start_pos % self.page_size == 0, f"segment start {start_pos} is not page-aligned"
        self.free(free_index)

    def all_free_slots(self) -> list[int]:
        """Every free slot index (a census for invariants, not an SGLang API)."""
        return self.free_pages + self.release_pages


class PagedTokenToKVPoolAllocator:
    """Page size > 1: a free list of page ids; a page's slots are
    ``page * page_size + 0 .. page_size - 1``, and page 0 is never handed out."""

    def __init__(self, size: int, page_size: int, need_sort: bool = False) -> None:
        assert page_size > 1 and size >= page_size
        self.size = size
        self.page_size = page_size
        self.num_pages = size // page_size
        self.need_sort = need_sort
        self.clear()

    def clear(self) -> None:
        self.free_pages: list[int] = list(range(1, self.num_pages + 1))
        self.staged_pages: list[int] = []

    def available_size(self) -> int:
        return (len(self.free_pages) + len(self.staged_pages)) * self.page_size

    def merge_and_sort_free(self) -> None:
        if self.staged_pages:
            self.free_pages = sorted(self.free_pages + self.staged_pages)
            self.staged_pages = []

    def alloc(self, need_size: int) -> list[int] | None:
        """Whole pages from the front of the free list; ``need_size`` is page-aligned."""
        assert need_size % self.page_size == 0, "The allocation size should be page-aligned"
        num_pages = need_size // self.page_size
        if num_pages > len(self.free_pages):
            self.merge_and_sort_free()
        if num_pages > len(self.free_pages):
            return None
        out_pages = self.free_pages[:num_pages]
        del self.free_pages[:num_pages]
        return [page * self.page_size + i for page in out_pages for i in range(self.page_size)]

    def _release_page_ids(self, page_ids: list[int]) -> None:
        if self.need_sort:
            self.staged_pages.extend(page_ids)
        else:
            self.free_pages = page_ids + self.free_pages

    def free(self, free_index: Sequence[int]) -> None:
        """Free every page any of these slots lies in, once, in ascending page order
        (SGLang takes ``torch.unique`` of the page ids, which sorts)."""
        if not free_index:
            return
        self._release_page_ids(sorted({index // self.page_size for index in free_index}))

    def free_segment(self, free_index: Sequence[int], *, start_pos: int) -> None:
        """A page-aligned run of one request's row: every ``page_size``-th slot names a
        page, in row order (no sort, unlike ``free``)."""
        if not free_index:
            return
        assert start_pos % self.page_size == 0, f"segment start {start_pos} is not page-aligned"
        self._release_page_ids([index // self.page_size for index in free_index[:: self.page_size]])

    def all_free_slots(self) -> list[int]:
        return [
            page * self.page_size + i
            for page in self.free_pages + self.staged_pages
            for i in range(self.page_size)
        ]


KVAllocator = TokenToKVPoolAllocator | PagedTokenToKVPoolAllocator


def make_allocator(size: int, page_size: int = 1, need_sort: bool = False) -> KVAllocator:
    """The allocator SGLang builds for this page size."""
    if page_size == 1:
        return TokenToKVPoolAllocator(size, need_sort)
    return PagedTokenToKVPoolAllocator(size, page_size, need_sort)
