"""Narration for a step nobody wrote a text for (a playground's): what the snapshots show changed.

Every sentence is read off the step's snapshot and the one before it: blocks
taken, shared, cached, freed, un-hashed, and the prefix cache hits of the step.
"""

from __future__ import annotations

from engine.snapshot import BlockView
from engine.timeline import Timeline


def _ids(blocks: list[BlockView]) -> str:
    ids = [str(b.block_id) for b in blocks]
    shown = ", ".join(ids[:12]) + (f" and {len(ids) - 12} more" if len(ids) > 12 else "")
    return ("block " if len(ids) == 1 else "blocks ") + shown


def describe(timeline: Timeline, step: int) -> str:
    """Sentences on what changed at ``step``; at step 0, what the pool holds."""
    after = timeline.steps[step].snapshot
    held = [b for b in after.blocks if b.state == "held"]
    if step == 0:
        cached = sum(1 for b in after.blocks if b.block_hash is not None)
        return (
            f"A pool of {len(after.blocks) - 1} usable blocks of {timeline.block_size} tokens: "
            f"{len(held)} held, {cached} cached, {len(after.free_queue)} in the free queue."
        )
    before = timeline.steps[step - 1].snapshot
    pairs = list(zip(before.blocks, after.blocks, strict=True))
    taken = [a for b, a in pairs if b.ref_cnt == 0 and a.ref_cnt > 0]
    shared = [a for b, a in pairs if 0 < b.ref_cnt < a.ref_cnt]
    freed = [a for b, a in pairs if b.ref_cnt > 0 and a.ref_cnt == 0 and a.state != "null"]
    cached = [a for b, a in pairs if a.block_hash is not None and a.block_hash != b.block_hash]
    unhashed = [a for b, a in pairs if b.block_hash is not None and a.block_hash is None]
    sentences = []
    queries = after.stats.queries - before.stats.queries
    hits = after.stats.hits - before.stats.hits
    if queries:
        sentences.append(f"{hits} of {queries} looked-up prompt tokens came from the cache.")
    if taken:
        sentences.append(f"Took {_ids(taken)} from the head of the free queue.")
    if shared:
        sentences.append(f"{_ids(shared).capitalize()} gained a holder (ref_cnt up).")
    if cached:
        sentences.append(f"{_ids(cached).capitalize()} became full and cached.")
    if freed:
        still = sum(1 for b in freed if b.block_hash is not None)
        sentences.append(
            f"{_ids(freed).capitalize()} went back to the free queue ({still} still cached)."
        )
    if unhashed:
        why = "the reset" if after.stats.resets > before.stats.resets else "eviction for reuse"
        sentences.append(f"{_ids(unhashed).capitalize()} lost their hash ({why}).")
    return " ".join(sentences) or "The pool did not change."
