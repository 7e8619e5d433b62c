"""Our model of SGLang 0.5.23's RadixCache: tree invariants under random calls, and
cases read off the source."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.sglang.allocator import PagedTokenToKVPoolAllocator, TokenToKVPoolAllocator
from engine.sglang.kv_events import AllBlocksCleared, BlockRemoved, BlockStored
from engine.sglang.radix_cache import RadixCache, RadixKey, TreeNode


def check_invariants(tree: RadixCache) -> None:
    nodes = tree.all_nodes()
    tokens = sum(len(n.key) for n in nodes)
    assert tree.evictable_size() + tree.protected_size() == tokens == tree.total_size()
    assert tree.protected_size() == sum(len(n.key) for n in nodes if n.lock_ref > 0)
    for n in nodes:
        assert n.lock_ref >= 0
        assert n.value is not None and len(n.value) == len(n.key) > 0
        assert n.parent is not None and n.parent.children[n.key.child_key(tree.page_size)] is n
        # a locked node's parent is locked at least as often
        if n.parent is not tree.root_node:
            assert n.parent.lock_ref >= n.lock_ref
    leaves = {n for n in nodes if not n.children and n.lock_ref == 0}
    assert tree.evictable_leaves == leaves


ops = st.lists(
    st.tuples(
        st.sampled_from(["insert", "match", "lock", "unlock", "evict"]),
        st.lists(st.integers(0, 3), max_size=12),
        st.sampled_from([None, "a"]),
        st.integers(0, 20),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_tree_invariants_and_slot_conservation(
    calls: list[tuple[str, list[int], str | None, int]],
) -> None:
    allocator = TokenToKVPoolAllocator(200)
    tree = RadixCache(allocator)
    held: list[TreeNode] = []
    for op, tokens, extra, n in calls:
        if op == "insert":
            key = RadixKey(tokens, extra)
            slots = allocator.alloc(len(key))
            if slots is None:
                continue
            result = tree.insert(key, slots)
            # the caller frees its duplicates of the cached part
            allocator.free_segment(slots[: result.prefix_len], start_pos=0)
        elif op in ("match", "lock"):
            result = tree.match_prefix(RadixKey(tokens, extra))
            if op == "lock":
                tree.inc_lock_ref(result.last_device_node)
                held.append(result.last_device_node)
        elif op == "unlock" and held:
            tree.dec_lock_ref(held.pop(n % len(held)))
        elif op == "evict":
            before = {id(x): x for x in tree.all_nodes()}
            locked = {i for i, x in before.items() if x.lock_ref > 0}
            freed = tree.evict(n)
            after = {id(x) for x in tree.all_nodes()}
            assert locked <= after, "a locked node was evicted"
            assert freed == sum(len(before[i].key) for i in set(before) - after)
            # leaves first: every evicted node's children were evicted too
            for i in set(before) - after:
                assert all(id(c) not in after for c in before[i].children.values())
        check_invariants(tree)
        in_tree = sum(len(x.key) for x in tree.all_nodes())
        assert allocator.available_size() + in_tree == 200
        assert len(set(allocator.all_free_slots())) == allocator.available_size()


def test_a_match_ending_inside_a_segment_splits_it() -> None:
    tree = RadixCache()
    tree.insert(RadixKey([1, 2, 3, 4, 5]), [10, 11, 12, 13, 14])
    result = tree.match_prefix(RadixKey([1, 2, 3, 9]))
    assert result.device_prefix_len == 3
    top = tree.root_node.children[1]
    assert top is result.last_device_node
    assert top.key.token_ids == (1, 2, 3) and top.value == [10, 11, 12]
    (bottom,) = top.children.values()
    assert bottom.key.token_ids == (4, 5) and bottom.value == [13, 14]
    assert tree.evictable_leaves == {bottom}
    check_invariants(tree)


def test_extra_key_namespaces_never_share_nodes() -> None:
    tree = RadixCache()
    tree.insert(RadixKey([1, 2, 3], "lora-a"))
    assert tree.match_prefix(RadixKey([1, 2, 3])).device_prefix_len == 0
    assert tree.match_prefix(RadixKey([1, 2, 3], "lora-b")).device_prefix_len == 0
    assert tree.match_prefix(RadixKey([1, 2, 3], "lora-a")).device_prefix_len == 3
    tree.insert(RadixKey([1, 2, 3]))
    assert set(tree.root_node.children) == {1, ("lora-a", (1, 2, 3)[0])}
    assert tree.total_size() == 6


def test_page_size_16_matches_whole_pages_only() -> None:
    allocator = PagedTokenToKVPoolAllocator(256, 16)
    tree = RadixCache(allocator, page_size=16)
    tokens = list(range(40))
    slots = allocator.alloc(48)
    assert slots is not None
    tree.insert(RadixKey(tokens), slots[:40])
    assert tree.total_size() == 32  # the partial third page is not cached
    assert tree.match_prefix(RadixKey(tokens[:31])).device_prefix_len == 16
    assert tree.match_prefix(RadixKey(tokens[:20] + [99] * 20)).device_prefix_len == 16
    assert tree.match_prefix(RadixKey(tokens)).device_prefix_len == 32
    check_invariants(tree)
    free_before = allocator.available_size()
    assert tree.evict(1) == 16  # a whole node of one page goes back as a page
    assert allocator.available_size() == free_before + 16
    # a paged pool puts freed pages at the front of its free list
    assert allocator.free_pages[0] == slots[16] // 16


def test_lock_refs_move_tokens_between_evictable_and_protected() -> None:
    tree = RadixCache()
    tree.insert(RadixKey([1, 2, 3, 4]))
    node = tree.match_prefix(RadixKey([1, 2])).last_device_node
    assert tree.inc_lock_ref(node) == -2
    assert (tree.evictable_size(), tree.protected_size()) == (2, 2)
    assert tree.evict(10) == 2  # the unlocked leaf [3, 4] only
    assert tree.dec_lock_ref(node) == 2
    assert (tree.evictable_size(), tree.protected_size()) == (2, 0)
    assert tree.evict(10) == 2
    assert tree.total_size() == 0


def test_lru_evicts_the_least_recently_matched_leaf_and_the_parent_after_its_children() -> None:
    tree = RadixCache()
    tree.insert(RadixKey([1, 2, 3]))
    tree.insert(RadixKey([1, 2, 4]))
    tree.insert(RadixKey([7, 8]))
    tree.match_prefix(RadixKey([1, 2, 3]))
    assert tree.evict(1) == 1  # [4]: older than [3] and than [7, 8]
    assert tree.match_prefix(RadixKey([1, 2, 4])).device_prefix_len == 2
    assert tree.evict(2) == 2  # [7, 8]
    assert tree.evict(3) == 3  # [3], then its parent [1, 2]
    assert tree.total_size() == 0


def test_kv_events() -> None:
    tree = RadixCache(page_size=2, enable_kv_cache_events=True)
    tree.insert(RadixKey([1, 2, 3, 4]))
    tree.insert(RadixKey([1, 2, 5, 6]))
    events = tree.take_events()
    assert isinstance(events[0], AllBlocksCleared)
    stored = [e for e in events if isinstance(e, BlockStored)]
    assert [e.token_ids for e in stored] == [[1, 2, 3, 4], [5, 6]]
    assert stored[1].parent_block_hash == stored[0].block_hashes[0]
    tree.evict(4)
    (removed,) = tree.take_events()
    assert isinstance(removed, BlockRemoved) and len(removed.block_hashes) == 2


def test_the_root_is_stamped_as_sglangs_reset_stamps_it() -> None:
    # SGLang's reset builds its root through TreeNode.__init__, which reads the clock
    # twice: last_access_time, then creation_time (radix_cache.py, TreeNode.__init__).
    ticks = iter(range(1, 100))
    tree = RadixCache(TokenToKVPoolAllocator(8), clock=lambda: float(next(ticks)))
    assert (tree.root_node.last_access_time, tree.root_node.creation_time) == (1.0, 2.0)
    tree.insert(RadixKey([1, 2]), [0, 1])  # ticks 3 to 5: the walk's, the new node's two
    tree.reset()
    assert (tree.root_node.last_access_time, tree.root_node.creation_time) == (6.0, 7.0)
