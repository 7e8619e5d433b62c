"""A complete, plain-data picture of SGLang's model at one moment: the radix tree, the
slot pool, the requests and the counters (what a radix-tree view needs to draw a step).

The SGLang counterpart of engine/lab/play/vllm/snapshot.py (vLLM's, unchanged). Node ids are
the timeline's own: the root is 0 and every other node is numbered in the order it
was built (``NodeIds``), so the same scenario gives the same ids on every run (the
model's ``TreeNode.id`` counts nodes across all trees a process ever built).
Everything here is immutable and JSON-serialisable via ``to_dict``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from engine.lab.play.line_tracer import untraced
from engine.lab.play.records import EventRecord, LogLine
from engine.sglang.allocator import KVAllocator, PagedTokenToKVPoolAllocator
from engine.sglang.kv_events import KVCacheEvent
from engine.sglang.radix_cache import RadixCache, TreeNode
from engine.sglang.scheduler import Req, Scheduler

ROOT_ID = 0
HASH_MASK = (1 << 64) - 1


class NodeIds:
    """The timeline's id of each tree node: 0 for the root (every root a reset builds),
    then 1, 2, ... in the order nodes are first seen (the recorder sees each as it is
    built, so this is the order of building)."""

    def __init__(self) -> None:
        self._ids: dict[int, int] = {}  # id(node) -> our id; nodes are kept alive below
        self._nodes: list[TreeNode] = []
        self._roots: set[int] = set()

    def mark_root(self, node: TreeNode) -> None:
        self._roots.add(id(node))
        self._nodes.append(node)

    def of(self, node: TreeNode) -> int:
        key = id(node)
        if key in self._roots:
            return ROOT_ID
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids) + 1
            self._nodes.append(node)  # kept, so id(node) is never reused by another
        return found


@dataclass(frozen=True)
class NodeRecord:
    """One node of the tree (the root has id 0, no parent and an empty key)."""

    node_id: int
    parent: int | None
    token_ids: tuple[int, ...]  # the node's key segment
    extra_key: str | None  # its namespace (a request's cache_salt, here)
    value: tuple[int, ...]  # the KV slot of each token of the key
    pages: tuple[int, ...]  # the pages of those slots when page_size > 1, else ()
    lock_ref: int
    last_access_time: int  # the tree's clock (a counter: one tick per stamp)
    creation_time: int
    hit_count: int
    evictable_leaf: bool  # unlocked, holds slots, no child: evict() may take it
    prefix_tokens: int  # tokens from the root to the end of this node

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)


@dataclass(frozen=True)
class SGLangRequestRecord:
    request_id: str
    status: str  # "waiting", "running" or "finished"
    extra_key: str | None
    num_prompt_tokens: int
    num_tokens: int  # prompt and output so far
    num_output_tokens: int
    max_new_tokens: int
    hit_tokens: int  # matched prefix at admission (prefix_len then), -1 before it
    prefix_len: int  # now: what the tree holds of it (moves on at each checkpoint)
    num_matched_prefix_tokens: int  # what lpm sorts by (prefix_len capped at len - 1)
    kv_row: tuple[int, ...]  # the KV slot of each token whose KV is computed
    cache_protected_len: int  # kv_row[:cache_protected_len] are the tree's slots
    last_node: int | None  # the node its last match ended at
    locked_node: int | None  # the node whose path it holds locked (running requests)


@dataclass(frozen=True)
class SGLangCounters:
    """Cumulative since the scenario started."""

    queries: int = 0  # prompt tokens of the requests admitted
    hits: int = 0  # their matched prefix at admission
    evicted_tokens: int = 0
    evicted_nodes: int = 0
    splits: int = 0
    resets: int = 0  # flush_cache calls that went through


@dataclass(frozen=True)
class SGLangSnapshot:
    page_size: int
    num_slots: int  # the pool's KV slots (slot 0, SGLang's padded slot, not among them)
    nodes: tuple[NodeRecord, ...]  # the root first, then depth first in child order
    free_slots: tuple[int, ...]  # in the allocator's order (the next alloc takes the front)
    free_pages: tuple[int, ...]  # page ids in that order when page_size > 1, else ()
    requests: tuple[SGLangRequestRecord, ...]  # in arrival order, finished ones included
    waiting: tuple[str, ...]  # the waiting queue in its order (the policy's, once sorted)
    running: tuple[str, ...]
    finished: tuple[str, ...]
    evictable_size: int
    protected_size: int
    tree_tokens: int  # tokens in the tree: evictable_size + protected_size
    counters: SGLangCounters
    logs: tuple[LogLine, ...]  # written during this step
    events: tuple[EventRecord, ...]  # KV events recorded during this step

    def node(self, node_id: int) -> NodeRecord:
        return next(n for n in self.nodes if n.node_id == node_id)

    def request(self, request_id: str) -> SGLangRequestRecord:
        return next(r for r in self.requests if r.request_id == request_id)

    def path(self, node_id: int) -> tuple[int, ...]:
        """The nodes from the root's child down to ``node_id`` (empty for the root)."""
        parents = {n.node_id: n.parent for n in self.nodes}
        path: list[int] = []
        current: int | None = node_id
        while current is not None and current != ROOT_ID:
            path.append(current)
            current = parents[current]
        return tuple(reversed(path))

    @property
    def evictable_leaves(self) -> tuple[int, ...]:
        return tuple(n.node_id for n in self.nodes if n.evictable_leaf)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["events"] = [event.to_dict() for event in self.events]
        return data


def hash_text(value: int) -> str:
    """An event's 64-bit hash as 16 hex digits (JSON numbers lose precision above 2**53)."""
    return f"{value & HASH_MASK:016x}"


def sglang_event_record(event: KVCacheEvent) -> EventRecord:
    fields: list[tuple[str, Any]] = []
    for field in dataclasses.fields(event):
        value = getattr(event, field.name)
        if field.name == "block_hashes":
            value = [hash_text(h) for h in value]
        elif field.name == "parent_block_hash" and value is not None:
            value = hash_text(value)
        elif isinstance(value, list):
            value = list(value)
        fields.append((field.name, value))
    return EventRecord(type(event).__name__, tuple(fields))


def _pages(value: list[int], page_size: int) -> tuple[int, ...]:
    if page_size == 1:
        return ()
    return tuple(dict.fromkeys(slot // page_size for slot in value))


def tree_records(cache: RadixCache, ids: NodeIds, page_size: int) -> tuple[NodeRecord, ...]:
    """Every node of the tree, the root first, then depth first in child order."""
    records: list[NodeRecord] = []
    stack: list[tuple[TreeNode, int]] = [(cache.root_node, 0)]
    while stack:
        node, before = stack.pop()
        value = node.value or []
        prefix = before + len(node.key)
        records.append(
            NodeRecord(
                node_id=ids.of(node),
                parent=None if node.parent is None else ids.of(node.parent),
                token_ids=node.key.token_ids,
                extra_key=node.key.extra_key,
                value=tuple(value),
                pages=_pages(value, page_size),
                lock_ref=node.lock_ref,
                last_access_time=int(node.last_access_time),
                creation_time=int(node.creation_time),
                hit_count=node.hit_count,
                evictable_leaf=node in cache.evictable_leaves,
                prefix_tokens=prefix,
            )
        )
        stack.extend((child, prefix) for child in reversed(node.children.values()))
    return tuple(records)


def _free(allocator: KVAllocator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    slots = tuple(allocator.all_free_slots())
    if isinstance(allocator, PagedTokenToKVPoolAllocator):
        return slots, tuple(allocator.free_pages + allocator.staged_pages)
    return slots, ()


def request_record(req: Req, status: str, hit_tokens: int, ids: NodeIds) -> SGLangRequestRecord:
    num_tokens = len(req.origin_input_ids) + len(req.output_ids)
    return SGLangRequestRecord(
        request_id=req.rid,
        status=status,
        extra_key=req.extra_key,
        num_prompt_tokens=len(req.origin_input_ids),
        num_tokens=num_tokens,
        num_output_tokens=len(req.output_ids),
        max_new_tokens=req.max_new_tokens,
        hit_tokens=hit_tokens,
        prefix_len=req.prefix_len,
        num_matched_prefix_tokens=req.num_matched_prefix_tokens,
        kv_row=tuple(req.kv_row),
        cache_protected_len=req.cache_protected_len,
        last_node=None if req.last_node is None else ids.of(req.last_node),
        locked_node=None if req.lock is None else ids.of(req.lock.node),
    )


def take_sglang_snapshot(
    scheduler: Scheduler,
    requests: list[Req],
    hit_tokens: dict[str, int],
    ids: NodeIds,
    counters: SGLangCounters,
    logs: tuple[LogLine, ...],
    events: list[KVCacheEvent],
) -> SGLangSnapshot:
    """The state now; read without the tracer seeing it (the code panel shows what the
    engine ran, not what the snapshot looked at)."""
    with untraced():
        cache = scheduler.tree_cache
        page_size = scheduler.page_size
        waiting = {id(r) for r in scheduler.waiting_queue}
        running = {id(r) for r in scheduler.running}

        def status(req: Req) -> str:
            if id(req) in waiting:
                return "waiting"
            return "running" if id(req) in running else "finished"

        free_slots, free_pages = _free(scheduler.allocator)
        return SGLangSnapshot(
            page_size=page_size,
            num_slots=scheduler.allocator.size,
            nodes=tree_records(cache, ids, page_size),
            free_slots=free_slots,
            free_pages=free_pages,
            requests=tuple(
                request_record(r, status(r), hit_tokens.get(r.rid, -1), ids) for r in requests
            ),
            waiting=tuple(r.rid for r in scheduler.waiting_queue),
            running=tuple(r.rid for r in scheduler.running),
            finished=tuple(r.rid for r in scheduler.finished),
            evictable_size=cache.evictable_size(),
            protected_size=cache.protected_size(),
            tree_tokens=cache.total_size(),
            counters=counters,
            logs=logs,
            events=tuple(sglang_event_record(event) for event in events),
        )
