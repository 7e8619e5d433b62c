"""KV-cache events as SGLang's radix cache records them (``mem_cache/events.py``).

Hashes: SGLang chains a native SHA-256 over each page's token ids; we chain
``hashlib.sha256`` over the same inputs, so the values differ from SGLang's but the
same pages get equal hashes in both. As in SGLang without registered LoRA names,
``extra_key`` does not enter an event's hash.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

MEDIUM_GPU = "GPU"


@dataclass
class BlockStored:
    """Pages cached in one chain: consecutive stores whose parent is the tail's last
    hash are merged into one event (``KVCacheEventRecorder.enqueue``)."""

    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    medium: str = MEDIUM_GPU


@dataclass
class BlockRemoved:
    """Pages evicted: one per evicted node, merged with a BlockRemoved at the queue's tail."""

    block_hashes: list[int] = field(default_factory=list)
    medium: str = MEDIUM_GPU


@dataclass(frozen=True)
class AllBlocksCleared:
    """The tree was reset (also recorded once when the cache is built)."""


KVCacheEvent = BlockStored | BlockRemoved | AllBlocksCleared


def page_hashes(token_ids: Sequence[int], prior_hash: str | None, page_size: int) -> list[str]:
    """One chained hex digest per page (the last page may be short)."""
    hashes: list[str] = []
    for start in range(0, len(token_ids), page_size):
        page = token_ids[start : start + page_size]
        # each token as 8 little-endian signed bytes, the page's at once (the same digest
        # as one update per token)
        data = struct.pack(f"<{len(page)}q", *page)
        prior = bytes.fromhex(prior_hash) if prior_hash else b""
        prior_hash = hashlib.sha256(prior + data).hexdigest()
        hashes.append(prior_hash)
    return hashes


def hash_str_to_int64(hash_str: str) -> int:
    """The first 64 bits of a hex digest as a signed int64, as events carry it."""
    value = int(hash_str[:16], 16)
    return value - 2**64 if value >= 2**63 else value


class KVCacheEventRecorder:
    """Queues events when ``enabled``; every ``record_*`` is a no-op otherwise."""

    def __init__(self, *, enabled: bool, page_size: int) -> None:
        self.enabled = enabled
        self.page_size = page_size
        self._queue: list[KVCacheEvent] = []

    def enqueue(self, event: KVCacheEvent) -> None:
        if self._queue:
            tail = self._queue[-1]
            if isinstance(tail, BlockRemoved) and isinstance(event, BlockRemoved):
                if tail.medium == event.medium:
                    tail.block_hashes.extend(event.block_hashes)
                    return
            elif (
                isinstance(tail, BlockStored)
                and isinstance(event, BlockStored)
                and tail.medium == event.medium
                and tail.block_size == event.block_size
                and tail.block_hashes
                and event.parent_block_hash == tail.block_hashes[-1]
            ):
                tail.block_hashes.extend(event.block_hashes)
                tail.token_ids.extend(event.token_ids)
                return
        self._queue.append(event)

    def record_store(
        self, hashes: Sequence[str], parent_hash: str | None, token_ids: Sequence[int]
    ) -> None:
        """One BlockStored per page of a new node (before merging)."""
        if not self.enabled:
            return
        parent = None if parent_hash is None else hash_str_to_int64(parent_hash)
        for page_index, start in enumerate(range(0, len(token_ids), self.page_size)):
            page_tokens = list(token_ids[start : start + self.page_size])
            block_hash = hash_str_to_int64(hashes[page_index])
            self.enqueue(BlockStored([block_hash], parent, page_tokens, len(page_tokens)))
            parent = block_hash

    def record_remove(self, hashes: Sequence[str]) -> None:
        if not self.enabled or not hashes:
            return
        self.enqueue(BlockRemoved([hash_str_to_int64(h) for h in hashes]))

    def record_all_cleared(self) -> None:
        if self.enabled:
            self.enqueue(AllBlocksCleared())

    def take(self) -> list[KVCacheEvent]:
        if not self.enabled:
            return []
        events, self._queue = self._queue, []
        return events
