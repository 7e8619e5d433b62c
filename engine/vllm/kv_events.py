"""KV-cache events, as vLLM publishes them to subscribers (``vllm/distributed/kv_events.py``).

Each event is a frozen record; a pool queues them and ``take_events`` hands them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.vllm.kv_cache_utils import ExternalBlockHash

# Where the cached blocks live: a pool's events name it.
MEDIUM_GPU = "GPU"


@dataclass(frozen=True)
class BlockStored:
    """Blocks were cached under these hashes: one event per ``cache_full_blocks`` call.

    ``parent_block_hash`` is the hash of the block before the first stored one,
    or None when the stored run starts at the first block of the request.
    """

    block_hashes: tuple[ExternalBlockHash, ...]
    parent_block_hash: ExternalBlockHash | None
    token_ids: tuple[int, ...]
    block_size: int
    lora_id: int | None
    medium: str
    lora_name: str | None
    # one entry per stored block, untagged: ("alice",) for the salt "alice"
    extra_keys: tuple[tuple[Any, ...] | None, ...] | None
    group_idx: int


@dataclass(frozen=True)
class BlockRemoved:
    """A cached hash was dropped because its block was handed out again (one key per event)."""

    block_hashes: tuple[ExternalBlockHash, ...]
    medium: str
    group_idx: int


@dataclass(frozen=True)
class AllBlocksCleared:
    """The whole prefix cache was reset: one event instead of a BlockRemoved per block."""


KVCacheEvent = BlockStored | BlockRemoved | AllBlocksCleared
