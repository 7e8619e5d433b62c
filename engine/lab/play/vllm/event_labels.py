"""Short labels for the hashes that KV events carry.

A KV event carries the low 64 bits of a digest (vLLM's ``ExternalBlockHash``),
not the digest the pool shows. The engine's own converter maps every digest the
pool held at this step or the one before to its event form, so an event can be
labelled as the pool labels the block (the page and the terminal player alike).
"""

from __future__ import annotations

from engine.lab.play.records import EventRecord
from engine.lab.play.vllm.snapshot import HASH_LABEL_LENGTH, BlockRecord, Snapshot
from engine.lab.play.vllm.timeline import Timeline
from engine.vllm.kv_cache_utils import BlockHash, maybe_convert_block_hash


def _blocks(snapshot: Snapshot) -> tuple[BlockRecord, ...]:
    cpu = snapshot.offload.cpu_blocks if snapshot.offload else ()
    return snapshot.blocks + cpu


def external_key(value: object) -> int | None:
    """An event's hash as an int: JSON-safe snapshots write big ones as hex text."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 16)
        except ValueError:
            return None
    return None


def event_hash_labels(timeline: Timeline, step: int) -> dict[int, str]:
    """Event hash (as an int) -> the pool's label for that digest."""
    snapshots = [timeline.steps[step].snapshot]
    if step > 0:  # a BlockRemoved names a hash the block had before this step
        snapshots.append(timeline.steps[step - 1].snapshot)
    labels: dict[int, str] = {}
    for snapshot in snapshots:
        for block in _blocks(snapshot):
            if block.block_hash and block.hash_label:
                external = maybe_convert_block_hash(BlockHash(bytes.fromhex(block.block_hash)))
                assert isinstance(external, int)
                labels.setdefault(external, block.hash_label)
    return labels


def event_label(value: object, labels: dict[int, str]) -> str:
    key = external_key(value)
    if key is not None and key in labels:
        return labels[key]
    # Not held by any block any more: show the event's own digits, marked.
    return f"~{str(value)[:HASH_LABEL_LENGTH]}"


def event_hashes(event: EventRecord) -> list[object]:
    """The block hashes an event names (BlockStored, BlockRemoved), in its order."""
    fields = dict(event.fields)
    hashes = fields.get("block_hashes") or []
    return list(hashes) if isinstance(hashes, list | tuple) else []
