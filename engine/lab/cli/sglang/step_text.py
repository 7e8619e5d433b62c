"""An SGLang timeline's step as terminal text: the tree, the pool, the requests, the step."""

from __future__ import annotations

from collections.abc import Sequence

from engine.lab.play.sglang.facts import Walk
from engine.lab.play.sglang.narration import node_label
from engine.lab.play.sglang.snapshot import ROOT_ID, NodeRecord, SGLangSnapshot
from engine.lab.play.sglang.timeline import SGLangStep, SGLangTimeline


def spans(values: Sequence[int]) -> str:
    """``1..16,201..206``: runs of consecutive numbers, in their order."""
    parts: list[str] = []
    start = previous = None
    for value in values:
        if previous is not None and value == previous + 1:
            previous = value
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}..{previous}")
        start = previous = value
    if start is not None:
        parts.append(str(start) if start == previous else f"{start}..{previous}")
    return ",".join(parts) or "-"


def _node_text(node: NodeRecord, page_size: int) -> str:
    if node.node_id == ROOT_ID:
        return f"root lock_ref={node.lock_ref}"
    where = f"pages [{spans(node.pages)}]" if page_size > 1 else f"slots [{spans(node.value)}]"
    namespace = f" extra_key={node.extra_key!r}" if node.extra_key is not None else ""
    leaf = " *evictable leaf*" if node.evictable_leaf else ""
    tokens = f"tokens [{spans(node.token_ids)}] ({node.num_tokens})"
    state = f"lock_ref={node.lock_ref} last_access={node.last_access_time}{leaf}"
    return f"{node_label(node.node_id)} {tokens}{namespace} {where} {state}"


def tree_lines(snapshot: SGLangSnapshot) -> list[str]:
    """The tree, indented by depth (children in the tree's own order)."""
    depth = {ROOT_ID: 0}
    lines = []
    for node in snapshot.nodes:
        if node.parent is not None:
            depth[node.node_id] = depth[node.parent] + 1
        lines.append("  " + "   " * depth[node.node_id] + _node_text(node, snapshot.page_size))
    return lines


def _walk_text(walk: Walk) -> str:
    who = walk.request_id or "?"
    path = " -> ".join(node_label(n) for n in walk.path) or "the root"
    if walk.phase == "insert":
        text = f"insert {who}: {walk.key_tokens} tokens, {walk.matched_tokens} already cached, "
        text += f"path {path}"
        if walk.new_node is not None:
            text += f" (new {node_label(walk.new_node)})"
    else:
        text = f"{walk.phase} match {who}: {walk.matched_tokens} of {walk.key_tokens} tokens, "
        text += f"path {path}"
    if walk.split is not None:
        text += f"; split made {node_label(walk.split)}"
    return text


def render_sglang_snapshot(snapshot: SGLangSnapshot) -> list[str]:
    lines = ["radix tree:"]
    lines.extend(tree_lines(snapshot))
    unit = f"pages [{spans(snapshot.free_pages)}]" if snapshot.page_size > 1 else ""
    lines.append(
        f"free slots (the front is taken first): [{spans(snapshot.free_slots)}] "
        f"({len(snapshot.free_slots)} of {snapshot.num_slots}) {unit}".rstrip()
    )
    lines.append(
        f"sizes: evictable {snapshot.evictable_size}, protected {snapshot.protected_size}, "
        f"tree {snapshot.tree_tokens} tokens"
    )
    lines.append(f"waiting (in the queue's order): {', '.join(snapshot.waiting) or '-'}")
    for r in snapshot.requests:
        hit = "not admitted" if r.hit_tokens < 0 else f"hit {r.hit_tokens} at admission"
        row = f"row [{spans(r.kv_row)}]" if r.kv_row else "no row"
        lock = f", locks the path to {node_label(r.locked_node)}" if r.locked_node else ""
        lines.append(
            f"request {r.request_id}: {r.status}, {r.num_prompt_tokens} prompt + "
            f"{r.num_output_tokens} output tokens, {hit}, {row}{lock}"
        )
    c = snapshot.counters
    lines.append(
        f"counters: queries {c.queries} hits {c.hits} evicted {c.evicted_tokens} tokens "
        f"({c.evicted_nodes} nodes) splits {c.splits} resets {c.resets}"
    )
    lines.extend(f"log: {line}" for line in snapshot.logs)
    lines.extend(f"event: {event.to_dict()}" for event in snapshot.events)
    return lines


def render_sglang_step(timeline: SGLangTimeline, step: SGLangStep) -> list[str]:
    """What only SGLang's step shows (engine/lab/cli/main.py prints the rest): the walks, the
    evictions, then the state after it."""
    lines = [_walk_text(walk) for walk in step.facts.walks if walk.phase != "priority"]
    lines.extend(
        f"lpm ranks {walk.request_id}: {walk.matched_tokens} tokens matched"
        + (f"; split made {node_label(walk.split)}" if walk.split is not None else "")
        for walk in step.facts.walks
        if walk.phase == "priority"
    )
    for eviction in step.facts.evictions:
        lines.append(
            f"evicted {node_label(eviction.node)}: {eviction.tokens} tokens, slots "
            f"[{spans(eviction.slots)}] back to the pool"
        )
    return lines + render_sglang_snapshot(step.snapshot)
