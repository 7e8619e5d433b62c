"""The index a KV-event router keeps: per replica, the block hashes it holds, fed only by
the events the replicas publish (vLLM's ``BlockStored`` / ``BlockRemoved`` /
``AllBlocksCleared``, engine/vllm/kv_events.py; SGLang's of the same names,
engine/sglang/kv_events.py). llm-d's KV-cache indexer and Dynamo's ``KvIndexer`` keep
this map (block key -> the pods or workers that hold it); a router that keeps it never
reads a replica's pool, so what it believes can be behind what the replica holds.

Hashes are the events' external ones (vLLM: the low 64 bits of the block hash; SGLang:
the first 64 bits of the page's chained digest), so a request's own hashes, computed as
the engine computes them (the fixed ``NONE_HASH`` seed makes them equal on every
replica), look up the same keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engine.sglang import kv_events as sglang_events
from engine.vllm import kv_events as vllm_events

STORED = (vllm_events.BlockStored, sglang_events.BlockStored)
REMOVED = (vllm_events.BlockRemoved, sglang_events.BlockRemoved)
CLEARED = (vllm_events.AllBlocksCleared, sglang_events.AllBlocksCleared)


class KVEventIndex:
    """Per replica, the set of block hashes its events say it holds."""

    def __init__(self, replicas: int) -> None:
        self.held: list[set[int]] = [set() for _ in range(replicas)]
        self.events_applied = 0

    def apply(self, replica: int, events: Iterable[object]) -> None:
        """A replica's events, in the order it published them."""
        held = self.held[replica]
        for event in events:
            self.events_applied += 1
            if isinstance(event, STORED):
                held.update(event.block_hashes)  # type: ignore[arg-type]
            elif isinstance(event, REMOVED):
                held.difference_update(event.block_hashes)
            elif isinstance(event, CLEARED):
                held.clear()

    def matched_blocks(self, replica: int, block_hashes: Sequence[int]) -> int:
        """How many of the request's blocks, from the first, the replica holds (a
        prefix cache reuses a prefix only: the first missing block ends it)."""
        held = self.held[replica]
        count = 0
        for block_hash in block_hashes:
            if block_hash not in held:
                break
            count += 1
        return count
