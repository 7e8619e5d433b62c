"""Test helpers: a readable hash and the state format of the vLLM reference transcripts.

The transcripts of vLLM 0.33.0 were recorded with a hash function whose digest is
the token chain itself ("1,2,3,4|5,6,7,8"), so states can be compared by eye.
"""

from __future__ import annotations

import json
from typing import Any

from engine.lab.play.vllm.snapshot import event_record
from engine.vllm import kv_cache_utils
from engine.vllm.block_pool import BlockPool
from engine.vllm.kv_cache_utils import get_block_hash
from engine.vllm.kv_events import KVCacheEvent


def readable_hash(obj: Any) -> bytes:
    """parent|tokens, with the first block's parent (NONE_HASH) left out."""
    parent, tokens, extra_keys = obj
    text = ",".join(str(t) for t in tokens)
    if extra_keys:
        text += repr(extra_keys)
    if parent == kv_cache_utils.NONE_HASH:
        return text.encode()
    return parent + b"|" + text.encode()


def _show(block_hash: bytes) -> str:
    return block_hash.decode()


def free_line(pool: BlockPool) -> str:
    free = [b.block_id for b in pool.free_block_queue.get_all_free_blocks()]
    return f"free(head->tail)={free} num_free={pool.get_num_free_blocks()}"


def blocks_line(pool: BlockPool) -> str:
    parts = []
    for block in pool.blocks:
        if block.is_null or (block.ref_cnt == 0 and block.block_hash is None):
            continue
        shown = f"r{block.ref_cnt}"
        if block.block_hash is not None:
            shown += "," + _show(get_block_hash(block.block_hash))
        parts.append(f"{block.block_id}({shown})")
    return "blocks(ref/hash, non-trivial)=" + " ".join(parts)


def hash_map(pool: BlockPool) -> dict[str, list[int]]:
    return {
        _show(get_block_hash(key)): [b.block_id for b in blocks]
        for key, blocks in pool.cached_block_hash_to_block.items()
    }


def event_dicts(events: list[KVCacheEvent]) -> list[dict[str, Any]]:
    """Events with bytes hashes shown readably, in the transcripts' field subset."""
    shown = []
    for event in events:
        data = event_record(event).to_dict()
        for key in ("block_hashes",):
            if key in data:
                data[key] = [bytes.fromhex(h).decode() for h in data[key]]
        if data.get("parent_block_hash") is not None:
            data["parent_block_hash"] = bytes.fromhex(data["parent_block_hash"]).decode()
        data.pop("lora_name", None)
        data.pop("extra_keys", None)
        shown.append(data)
    return shown


def state(pool: BlockPool) -> dict[str, Any]:
    return {"free": free_line(pool), "blocks": blocks_line(pool), "hash_map": hash_map(pool)}


def parse_event(line: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(line)
    return loaded
