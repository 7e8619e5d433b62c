"""SGLang's router's approximate tree (sgl-router, ``policies/cache_aware.rs`` and
``tree.rs``): per worker, the prompts the router sent it, as a prefix tree, with no word
from the worker. A match says how much of a new prompt a worker was sent before; its
size (what it was sent, shared parts once) is how full the router thinks it is; every
``eviction_interval`` the least recently used leaves go until each worker's tree is at
most ``max_tree_size``.

The real tree holds the prompt's characters; here it holds the prompt's pieces: a
workload's token ids (one token each), or a trace's 512-token units (the ``hash_ids``,
a partial last unit keyed with its length, so it matches only a unit of that length).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field


@dataclass(eq=False)
class _Node:
    tokens: int  # the piece's tokens
    parent: _Node | None
    key: Hashable = None
    children: dict[Hashable, _Node] = field(default_factory=dict)
    last_access: float = 0.0


class ApproxTree:
    """One worker's tree of the pieces routed to it."""

    def __init__(self) -> None:
        self.root = _Node(0, None)
        self.size = 0  # tokens in the tree

    def match(self, pieces: Sequence[Hashable], weights: Sequence[int]) -> int:
        """Tokens of the longest prefix of ``pieces`` in the tree."""
        node, matched = self.root, 0
        for piece, weight in zip(pieces, weights, strict=True):
            child = node.children.get(piece)
            if child is None:
                break
            matched += weight
            node = child
        return matched

    def insert(self, pieces: Sequence[Hashable], weights: Sequence[int], now: float) -> None:
        node = self.root
        node.last_access = now
        for piece, weight in zip(pieces, weights, strict=True):
            child = node.children.get(piece)
            if child is None:
                child = node.children[piece] = _Node(weight, node, piece)
                self.size += weight
            child.last_access = now
            node = child

    def evict_to(self, max_size: int) -> None:
        """Least recently used leaves first until the tree holds at most ``max_size``
        tokens (``evict_tenant_by_size``)."""
        if self.size <= max_size:
            return
        leaves = sorted(self._leaves(), key=lambda leaf: leaf.last_access)
        while self.size > max_size and leaves:
            leaf = leaves.pop(0)
            parent = leaf.parent
            assert parent is not None
            del parent.children[leaf.key]
            self.size -= leaf.tokens
            if parent is not self.root and not parent.children:
                # the parent is a leaf now: in order of its access among the rest
                at = next(
                    (i for i, other in enumerate(leaves) if other.last_access > parent.last_access),
                    len(leaves),
                )
                leaves.insert(at, parent)

    def _leaves(self) -> list[_Node]:
        found, stack = [], [self.root]
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            elif node is not self.root:
                found.append(node)
        return found
