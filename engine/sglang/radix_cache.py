"""The radix tree over KV slots (SGLang 0.5.23's ``mem_cache/radix_cache.py``).

Each non-root node holds a key segment (token ids) and its value, the KV slot of
each token; ``len(value) == len(key)``. A node's ``lock_ref`` counts the running
requests whose matched path goes through it; a locked node's tokens are
``protected``, the rest ``evictable``, and ``evictable_size() + protected_size()``
is always the number of tokens in the tree. Only unlocked leaves are evicted.

The clock: SGLang stamps ``last_access_time`` and ``creation_time`` with
``time.monotonic()`` (once per node built, once per ``match_prefix``/``insert``
walk). Here the cache is given a ``clock`` and calls it at exactly those points;
the default is a counter, so two runs of the same calls evict the same nodes.
"""

from __future__ import annotations

import heapq
import itertools
import sys
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from engine.sglang.kv_events import KVCacheEvent, KVCacheEventRecorder, page_hashes

ChildKey = Hashable


class RadixKey:
    """Token ids and an optional ``extra_key`` namespace: keys with different
    ``extra_key`` never share a node (the namespace is part of every child key)."""

    __slots__ = ("extra_key", "token_ids")

    def __init__(self, token_ids: Sequence[int], extra_key: str | None = None) -> None:
        self.token_ids: tuple[int, ...] = tuple(token_ids)
        self.extra_key = extra_key

    def __len__(self) -> int:
        return len(self.token_ids)

    def __iter__(self) -> Iterator[int]:
        return iter(self.token_ids)

    def __getitem__(self, idx: slice) -> RadixKey:
        return RadixKey(self.token_ids[idx], self.extra_key)

    def __repr__(self) -> str:
        return f"RadixKey(extra_key={self.extra_key!r}, token_ids={self.token_ids!r})"

    def page_aligned(self, page_size: int) -> RadixKey:
        if page_size == 1:
            return self
        return self[: len(self) // page_size * page_size]

    def match(self, other: RadixKey, page_size: int = 1) -> int:
        """Length of the common prefix, rounded down to whole pages."""
        if self.extra_key != other.extra_key:
            raise ValueError("RadixKey operations require matching extra_key")
        mine, theirs = self.token_ids, other.token_ids
        matched = min(len(mine), len(theirs))
        # Speed only (the same count): the whole common length first (a walk's nodes
        # mostly match whole, and a tuple's full slice is itself, not a copy); else
        # equal halves are compared whole, in C, so only the half holding the first
        # difference is looked into, down to a token.
        if mine[:matched] == theirs[:matched]:
            return matched // page_size * page_size
        low = 0
        while low < matched:
            mid = (low + matched + 1) // 2
            if mine[low:mid] == theirs[low:mid]:
                low = mid
            else:
                matched = mid - 1
        return low // page_size * page_size

    def child_key(self, page_size: int = 1) -> ChildKey:
        """The dict key of a child: its first token (or first page), namespaced."""
        if len(self) < page_size or len(self) == 0:
            raise IndexError("RadixKey child range out of bounds")
        plain: ChildKey = self.token_ids[0] if page_size == 1 else tuple(self.token_ids[:page_size])
        return plain if self.extra_key is None else (self.extra_key, plain)


_node_ids = itertools.count()


class TreeNode:
    """One segment of the tree. ``value is None`` marks an evicted node (never
    kept in this model: evicted leaves are deleted)."""

    def __init__(self, now: float, priority: int = 0) -> None:
        self.children: dict[ChildKey, TreeNode] = {}
        self.parent: TreeNode | None = None
        self.key: RadixKey = RadixKey(())
        self.value: list[int] | None = None
        self.lock_ref = 0
        self.last_access_time = now
        self.creation_time = now
        self.hit_count = 0
        # page hashes, computed when a KV event first needs them
        self.hash_value: list[str] | None = None
        self.priority = priority
        self.id = next(_node_ids)

    @property
    def evicted(self) -> bool:
        return self.value is None

    def __lt__(self, other: TreeNode) -> bool:
        return self.last_access_time < other.last_access_time

    def __repr__(self) -> str:
        return f"TreeNode(id={self.id}, key={self.key!r}, lock_ref={self.lock_ref})"


EvictionPriority = float | tuple[float, float]


def _lru(node: TreeNode) -> EvictionPriority:
    return node.last_access_time


def _lfu(node: TreeNode) -> EvictionPriority:
    return (node.hit_count, node.last_access_time)


def _fifo(node: TreeNode) -> EvictionPriority:
    return node.creation_time


def _mru(node: TreeNode) -> EvictionPriority:
    return -node.last_access_time


def _filo(node: TreeNode) -> EvictionPriority:
    return -node.creation_time


def _priority(node: TreeNode) -> EvictionPriority:
    return (node.priority, node.last_access_time)


def _slru(node: TreeNode, protected_threshold: int = 2) -> EvictionPriority:
    return (1 if node.hit_count >= protected_threshold else 0, node.last_access_time)


# evict_policy.py's strategies (lower priority is evicted first); "lru" is the default
# (--radix-eviction-policy). T-LRU is not modelled.
EVICTION_STRATEGIES: dict[str, Callable[[TreeNode], EvictionPriority]] = {
    "lru": _lru,
    "lfu": _lfu,
    "fifo": _fifo,
    "mru": _mru,
    "filo": _filo,
    "priority": _priority,
    "slru": _slru,
}


class SlotAllocator(Protocol):
    """What the tree needs from the token-to-KV pool: give slots back."""

    def free_segment(self, free_index: Sequence[int], *, start_pos: int) -> None: ...


class MatchResult(NamedTuple):
    device_prefix_len: int
    last_device_node: TreeNode


class InsertResult(NamedTuple):
    prefix_len: int
    last_device_node: TreeNode


@dataclass
class TreeLock:
    """A holder's lock on the path to ``node``; ``unlock`` releases it."""

    node: TreeNode


def _counter_clock() -> Callable[[], float]:
    ticks = itertools.count(1)
    return lambda: float(next(ticks))


class RadixCache:
    """The prefix cache. ``token_to_kv_pool_allocator`` gets evicted slots back."""

    def __init__(
        self,
        token_to_kv_pool_allocator: SlotAllocator | None = None,
        page_size: int = 1,
        disable: bool = False,
        eviction_policy: str = "lru",
        enable_kv_cache_events: bool = False,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.disable = disable
        self.token_to_kv_pool_allocator = token_to_kv_pool_allocator
        self.page_size = page_size
        self.eviction_policy = eviction_policy.lower()
        self.kv_events = KVCacheEventRecorder(
            enabled=enable_kv_cache_events and not disable, page_size=page_size
        )
        self.clock = clock if clock is not None else _counter_clock()
        policy = "lru" if disable else self.eviction_policy
        if policy not in EVICTION_STRATEGIES:
            raise ValueError(f"Unknown eviction policy: {policy}")
        self.get_priority = EVICTION_STRATEGIES[policy]
        self.evictable_leaves: set[TreeNode] = set()
        self.reset()

    # ---- public API ----

    def reset(self) -> None:
        """An empty tree: the root is locked (lock_ref 1) and never evicted."""
        self.root_node = TreeNode(self.clock(), priority=-sys.maxsize)
        self.root_node.creation_time = self.clock()  # TreeNode's 2nd read, as SGLang's
        self.root_node.value = []
        self.root_node.lock_ref = 1
        self.root_node.hash_value = []
        self.evictable_size_ = 0
        self.protected_size_ = 0
        self.evictable_leaves.clear()
        self.kv_events.record_all_cleared()

    def _new_node(self, priority: int = 0) -> TreeNode:
        node = TreeNode(self.clock(), priority)
        node.creation_time = self.clock()
        return node

    def match_prefix(self, key: RadixKey) -> MatchResult:
        """The longest cached prefix of ``key`` (whole pages only). Refreshes the
        access time of the path; splits a node when the match ends inside it."""
        if self.disable or len(key) == 0:
            return MatchResult(0, self.root_node)
        key = key.page_aligned(self.page_size)
        if len(key) == 0:
            return MatchResult(0, self.root_node)
        value, last_node = self._match_prefix_helper(self.root_node, key)
        return MatchResult(sum(len(v) for v in value), last_node)

    def touch_prefix(self, key: RadixKey) -> None:
        """Refresh the access time of ``key``'s cached path, as ``match_prefix`` does
        (splitting the node the match ends inside), without returning anything
        (radix_cache.py:419-426)."""
        if self.disable or len(key) == 0:
            return
        key = key.page_aligned(self.page_size)
        if len(key) == 0:
            return
        self._match_prefix_helper(self.root_node, key)

    def insert(
        self,
        key: RadixKey,
        value: Sequence[int] | None = None,
        priority: int = 0,
        inserted_len: int = 0,
    ) -> InsertResult:
        """Cache ``key`` (page-aligned) with its slots; returns how much was
        already cached. The caller frees its own slots for that cached part."""
        if self.disable:
            return InsertResult(0, self.root_node)
        key = key.page_aligned(self.page_size)
        # SGLang's debug fallback: token ids stand in for slots. (Speed only: a list's
        # slice is already a new list, so it is not copied again.)
        if value is None:
            slots = list(key.token_ids)
        else:
            slots = value[: len(key)] if isinstance(value, list) else list(value[: len(key)])
        prefix_len, last_node = self._insert_helper(
            self.root_node, key, slots, priority, inserted_len
        )
        return InsertResult(prefix_len, last_node)

    def evict(self, num_tokens: int) -> int:
        """Evict unlocked leaves, oldest first by the eviction policy, until at least
        ``num_tokens`` are freed or none is left; a parent whose last child went
        becomes a candidate. Returns the number of tokens freed."""
        if self.disable:
            return 0
        eviction_heap = [(self.get_priority(node), node) for node in self.evictable_leaves]
        heapq.heapify(eviction_heap)
        num_evicted = 0
        while num_evicted < num_tokens and eviction_heap:
            _, x = heapq.heappop(eviction_heap)
            assert x.value is not None and x.parent is not None
            if self.token_to_kv_pool_allocator is not None:
                self.token_to_kv_pool_allocator.free_segment(x.value, start_pos=0)
            num_evicted += len(x.value)
            self._delete_leaf(x)
            if len(x.parent.children) == 0 and x.parent.lock_ref == 0:
                heapq.heappush(eviction_heap, (self.get_priority(x.parent), x.parent))
            self._record_remove(x)
        return num_evicted

    def inc_lock_ref(self, node: TreeNode) -> int:
        """Lock the path from ``node`` up to the root; returns the change in
        evictable tokens (<= 0)."""
        if self.disable:
            return 0
        delta = 0
        current: TreeNode | None = node
        while current is not None and current is not self.root_node:
            if current.lock_ref == 0:
                self.evictable_size_ -= len(current.key)
                self.protected_size_ += len(current.key)
                delta -= len(current.key)
            current.lock_ref += 1
            self._update_leaf_status(current)
            current = current.parent
        return delta

    def dec_lock_ref(self, node: TreeNode) -> int:
        """Undo one ``inc_lock_ref`` on the same node; returns the change (>= 0)."""
        if self.disable:
            return 0
        delta = 0
        current: TreeNode | None = node
        while current is not None and current is not self.root_node:
            if current.lock_ref == 1:
                self.evictable_size_ += len(current.key)
                self.protected_size_ -= len(current.key)
                delta += len(current.key)
            current.lock_ref -= 1
            self._update_leaf_status(current)
            current = current.parent
        return delta

    def lock(self, node: TreeNode) -> TreeLock:
        self.inc_lock_ref(node)
        return TreeLock(node)

    def unlock(self, lock: TreeLock | None) -> None:
        if lock is not None:
            self.dec_lock_ref(lock.node)

    def evictable_size(self) -> int:
        return self.evictable_size_

    def protected_size(self) -> int:
        return self.protected_size_

    def total_size(self) -> int:
        total = 0
        stack = [self.root_node]
        while stack:
            node = stack.pop()
            total += len(node.value or [])
            stack.extend(child for child in node.children.values() if not child.evicted)
        return total

    def path_device_indices(self, node: TreeNode) -> list[int]:
        """The KV slots on the path from the root to ``node``."""
        values: list[list[int]] = []
        current: TreeNode | None = node
        while current is not None and current is not self.root_node:
            values.append(current.value or [])
            current = current.parent
        slots: list[int] = []
        for value in reversed(values):
            slots.extend(value)
        return slots

    def take_events(self) -> list[KVCacheEvent]:
        return self.kv_events.take()

    def all_nodes(self) -> list[TreeNode]:
        """Every non-root node, depth first in child order."""
        nodes: list[TreeNode] = []
        stack = list(reversed(self.root_node.children.values()))
        while stack:
            node = stack.pop()
            nodes.append(node)
            stack.extend(reversed(node.children.values()))
        return nodes

    # ---- internals ----

    def _match_prefix_helper(
        self, node: TreeNode, key: RadixKey
    ) -> tuple[list[list[int]], TreeNode]:
        access_time = self.clock()
        node.last_access_time = access_time
        child_key = key.child_key(self.page_size)
        value: list[list[int]] = []
        while len(key) > 0 and child_key in node.children:
            child = node.children[child_key]
            child.last_access_time = access_time
            prefix_len = child.key.match(key, page_size=self.page_size)
            if prefix_len < len(child.key):
                new_node = self._split_node(child.key, child, prefix_len)
                assert new_node.value is not None
                value.append(new_node.value)
                node = new_node
                break
            assert child.value is not None
            value.append(child.value)
            node = child
            key = key[prefix_len:]
            if len(key):
                child_key = key.child_key(self.page_size)
        return value, node

    def _split_node(self, key: RadixKey, child: TreeNode, split_len: int) -> TreeNode:
        """Put a new node holding ``child``'s first ``split_len`` tokens above it."""
        assert child.value is not None and child.parent is not None
        new_node = self._new_node(priority=child.priority)
        new_node.hit_count = child.hit_count
        new_node.children = {key[split_len:].child_key(self.page_size): child}
        new_node.parent = child.parent
        new_node.lock_ref = child.lock_ref
        new_node.key = child.key[:split_len]
        new_node.value = child.value[:split_len]
        child.parent = new_node
        child.key = child.key[split_len:]
        child.value = child.value[split_len:]
        new_node.parent.children[key.child_key(self.page_size)] = new_node
        if child.hash_value is not None:
            pages = split_len if self.page_size == 1 else split_len // self.page_size
            new_node.hash_value = child.hash_value[:pages]
            child.hash_value = child.hash_value[pages:]
        return new_node

    def _insert_helper(
        self,
        node: TreeNode,
        key: RadixKey,
        value: list[int],
        priority: int = 0,
        inserted_len: int = 0,
    ) -> tuple[int, TreeNode]:
        access_time = self.clock()
        node.last_access_time = access_time
        node.priority = max(node.priority, priority)
        if len(key) == 0:
            return 0, node
        child_key = key.child_key(self.page_size)
        total_prefix_length = 0
        while len(key) > 0 and child_key in node.children:
            node = node.children[child_key]
            node.last_access_time = access_time
            prefix_len = node.key.match(key, page_size=self.page_size)
            total_prefix_length += prefix_len
            key = key[prefix_len:]
            value = value[prefix_len:]
            if prefix_len < len(node.key):
                node = self._split_node(node.key, node, prefix_len)
            node.priority = max(node.priority, priority)
            # nodes this request already inserted were counted back then
            if total_prefix_length > inserted_len:
                node.hit_count += 1
            if len(key):
                child_key = key.child_key(self.page_size)
        if len(key):
            new_node = self._new_node(priority=priority)
            new_node.parent = node
            new_node.key = key
            # speed only: ``value`` is this insert's own list (a slice), not copied again
            new_node.value = value
            if total_prefix_length + len(key) > inserted_len:
                new_node.hit_count += 1
            node.children[child_key] = new_node
            self.evictable_size_ += len(key)
            self._update_leaf_status(node)
            self._update_leaf_status(new_node)
            self._record_store(new_node)
            node = new_node
        return total_prefix_length, node

    def _delete_leaf(self, node: TreeNode) -> None:
        assert node.parent is not None
        removed = node.parent.children.pop(node.key.child_key(self.page_size), None)
        assert removed is node, "parent does not have child key"
        self.evictable_size_ -= len(node.key)
        self.evictable_leaves.discard(node)
        self._update_leaf_status(node.parent)

    def _update_leaf_status(self, node: TreeNode) -> None:
        """A node is an evictable leaf iff it holds slots, is unlocked and has no
        child holding slots."""
        if (
            node.evicted
            or node.lock_ref > 0
            or any(not child.evicted for child in node.children.values())
        ):
            self.evictable_leaves.discard(node)
        else:
            self.evictable_leaves.add(node)

    def _node_hash_values(self, node: TreeNode) -> list[str]:
        if node.hash_value is None:
            parent = node.parent
            parent_hash = None
            if parent is not None and parent.hash_value and len(parent.key) > 0:
                parent_hash = parent.hash_value[-1]
            node.hash_value = page_hashes(node.key.token_ids, parent_hash, self.page_size)
        return node.hash_value

    def _record_store(self, node: TreeNode) -> None:
        if not self.kv_events.enabled:
            return
        hashes = self._node_hash_values(node)
        parent = node.parent
        parent_hash = None
        if parent is not None and parent.parent is not None and parent.hash_value:
            parent_hash = parent.hash_value[-1]
        self.kv_events.record_store(hashes, parent_hash, node.key.token_ids)

    def _record_remove(self, node: TreeNode) -> None:
        if self.kv_events.enabled:
            self.kv_events.record_remove(self._node_hash_values(node))
