"""Differential check: SGLang 0.5.23's UnifiedRadixCache (FULL component only) against ours.

A default SGLang 0.5.23 server builds its prefix cache with
``create_unified_radix_cache`` (``sglang/srt/mem_cache/registry.py``): a
``UnifiedRadixCache`` whose only component, for a standard model, is FULL, on the
TreeCore that ``SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND`` names (default "rust", the
bundled extension; "python" is ``unified_tree_core.UnifiedTreeCore``). Our model mirrors
``RadixCache``. This drives the random call traces of ``sglang_differential.py``
(inserts, matches that split nodes, match + inc_lock_ref, dec_lock_ref of a held lock,
evict(N), reset; lru, lfu, fifo, mru, filo, slru) through both and compares after every
call the results, the freed slots, the sizes and the KV events (hashes renamed by first
appearance). ``--core python`` also compares the tree (keys, values, lock refs, hit
counts, priorities, evictable leaves; access and creation stamps by rank only with
``--stamps``); the Rust core does not expose its nodes (``root_node`` raises).

Where the two differ by interface rather than by what the cache holds, the comparison
is normalized (each is commented where it is done):
- dec_lock_ref: the unified core returns no delta, so its result is not compared;
- inc_lock_ref: the unified delta is the tokens newly protected, RadixCache's the
  change in evictable size (the same count, negated);
- insert: the unified insert frees the overlap with the tree itself, RadixCache leaves
  it to its caller; ours is credited the caller's free (values[:prefix_len]);
- Rust core only: its KV event queue is not coalesced as the Python recorder's is.

What remains is behaviour. The known one: a split gives the new parent the child's
creation_time in UnifiedTreeCore._split_node (RadixCache's new node gets a fresh
stamp), so under fifo a split-off prefix is evicted earlier, and under filo later.
Without ``--stamps`` the ranks of access stamps are not compared: after a split the
unified core restamps the child after creating the parent (RadixCache: parent after
child); the two are adjacent, never both leaves, so no eviction order depends on it.

Runs under a Python that can import SGLang (see tests/fidelity/sglang-venv.md):

    /tmp/sglang-venv/bin/python tests/fidelity/sglang_unified_differential.py --cases 1000
    /tmp/sglang-venv/bin/python tests/fidelity/sglang_unified_differential.py --core python
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
warnings.filterwarnings("ignore")

import torch  # noqa: E402
from sglang.srt.runtime_context import SpawnRanks, publish, reset_context  # noqa: E402
from sglang.srt.server_args import ServerArgs  # noqa: E402

reset_context()
publish(
    ServerArgs(model_path="dummy", device="cpu", disable_overlap_schedule=True),
    role="test",
    ranks=SpawnRanks(world_rank=0, dp_rank=None),
)

from sglang.srt.mem_cache.base_prefix_cache import (  # noqa: E402
    EvictParams,
    InsertParams,
    MatchPrefixParams,
)
from sglang.srt.mem_cache.cache_init_params import CacheInitParams  # noqa: E402
from sglang.srt.mem_cache.unified_cache.components import ComponentType  # noqa: E402
from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache  # noqa: E402

from engine.sglang.radix_cache import RadixCache, RadixKey  # noqa: E402
from tests.fidelity.sglang_differential import (  # noqa: E402
    Clock,
    RecordingAllocator,
    normalize_events,
    random_case,
    sg_key,
)
from tests.fidelity.sglang_differential import dump as our_dump  # noqa: E402


def unified_dump(core: Any) -> list[Any]:
    """The Python TreeCore's tree in the rows sglang_differential.dump makes."""
    out: list[Any] = []
    full = ComponentType.FULL

    def walk(node: Any, depth: int) -> None:
        for child in node.children.values():
            data = child.component_data[full]
            value = [] if data.value is None else [int(v) for v in data.value.tolist()]
            out.append(
                (
                    depth,
                    list(child.key.token_ids),
                    child.key.extra_key,
                    value,
                    data.lock_ref,
                    child.last_access_time,
                    child.creation_time,
                    child.hit_count,
                    child.priority,
                    child in core.evictable_device_leaves,
                )
            )
            walk(child, depth + 1)

    walk(core.root_node, 0)
    return out


def coalesced(events: list[Any]) -> list[Any]:
    """Normalized events merged as the Python recorder's enqueue merges them.

    KVCacheEventRecorder.enqueue (mem_cache/events.py) extends a queued BlockRemoved
    with the next one and a BlockStored with the next that chains onto it; the Rust
    core's queue (rust_tree_core/adapter.py _RustKVCacheEventRecorder) emits one per
    node. Applied to the Rust core's events only (--core rust).
    """
    out: list[Any] = []
    for e in events:
        tail = out[-1] if out else None
        if tail and tail[0] == e[0] == "BlockRemoved":
            out[-1] = (tail[0], tail[1] + e[1])
        elif (
            tail
            and tail[0] == e[0] == "BlockStored"
            and tail[1]
            and e[2] == tail[1][-1]
            and e[4] == tail[4]
        ):
            out[-1] = (tail[0], tail[1] + e[1], tail[2], tail[3] + e[3], tail[4])
        else:
            out.append(e)
    return out


def flat(freed: list[list[int]]) -> list[list[int]]:
    items = [x for chunk in freed for x in chunk]
    return [items] if items else []


def ranked(rows: list[Any]) -> list[Any]:
    """Access and creation stamps replaced by their rank: only their order decides."""
    rank = {t: i for i, t in enumerate(sorted({x for row in rows for x in row[5:7]}))}
    return [(*row[:5], rank[row[5]], rank[row[6]], *row[7:]) for row in rows]


def run_case(seed: int, num_ops: int, core: str, stamps: bool) -> tuple[int, str | None]:
    case = random_case(seed, num_ops)
    page_size, policy, events_on = case.page_size, case.policy, case.events_on
    sg_alloc, our_alloc = RecordingAllocator(), RecordingAllocator()
    sg = UnifiedRadixCache(
        CacheInitParams(
            disable=False,
            req_to_token_pool=None,  # type: ignore[arg-type]
            token_to_kv_pool_allocator=sg_alloc,  # type: ignore[arg-type]
            page_size=page_size,
            eviction_policy=policy,
            enable_kv_cache_events=events_on,
            tree_components=(ComponentType.FULL,),
            tree_core_backend=core,
        )
    )
    assert type(sg.tree_core).__name__ == (
        "RustUnifiedTreeCore" if core == "rust" else "UnifiedTreeCore"
    )
    ours = RadixCache(
        our_alloc,
        page_size=page_size,
        eviction_policy=policy,
        enable_kv_cache_events=events_on,
        clock=Clock(),
    )
    held: list[tuple[Any, Any]] = []
    sg_names: dict[int, int] = {}
    our_names: dict[int, int] = {}

    for op_index, call in enumerate(case.calls):
        tokens, extra, what, values = call.tokens, call.extra_key, call.what, call.values
        got: tuple[Any, Any]
        if call.kind == "insert":
            a = sg.insert(
                InsertParams(
                    key=sg_key(tokens, extra), value=torch.tensor(values, dtype=torch.int64)
                )
            )
            b = ours.insert(RadixKey(tokens, extra), values)
            got = (a.prefix_len, b.prefix_len)
            # UnifiedRadixCache.insert frees the overlap itself (FreeDeviceKV of
            # value[prev_prefix_len:overlap], unified_tree_core._insert_overlap_step);
            # RadixCache leaves it to its caller (cache_finished_req frees
            # kv_indices[cache_protected_len:prefix_len]). With prev_prefix_len 0 the
            # caller's free is values[:prefix_len]; compared as one flat list.
            if b.prefix_len:
                our_alloc.freed.append(values[: b.prefix_len])
            sg_alloc.freed = flat(sg_alloc.freed)
            our_alloc.freed = flat(our_alloc.freed)
        elif call.kind == "match":
            a = sg.match_prefix(MatchPrefixParams(key=sg_key(tokens, extra)))
            b = ours.match_prefix(RadixKey(tokens, extra))
            got = (a.device_prefix_len, b.device_prefix_len)
            if call.lock:
                receipt = sg.inc_lock_ref(a.last_device_node)
                db = ours.inc_lock_ref(b.last_device_node)
                held.append(((a.last_device_node, receipt), b.last_device_node))
                # The unified core's delta is the tokens it protected (full.py
                # acquire_component_lock); RadixCache's is the change in evictable
                # size, the same count negated.
                got = ((got[0], receipt.delta), (got[1], -db))
        elif call.kind == "dec_lock_ref":
            (node_id, receipt), our_node = held.pop(call.index)
            # UnifiedTreeCore.dec_lock_ref returns DecLockRefResult() with no delta
            # ("no caller uses it yet"); RadixCache's is the unlocked tokens. The call
            # is compared by its effect (sizes, tree), not its result.
            da = sg.dec_lock_ref(node_id, receipt.to_dec_params()).delta
            ours.dec_lock_ref(our_node)
            got = (da, None)
        elif call.kind == "evict":
            n = call.num_tokens
            got = (sg.evict(EvictParams(num_tokens=n)).num_tokens_evicted, ours.evict(n))
        else:
            held.clear()
            sg.reset()
            ours.reset()
            got = (None, None)

        diffs = []
        if got[0] != got[1]:
            diffs.append(f"result {got[0]} != {got[1]}")
        if sg_alloc.freed != our_alloc.freed:
            diffs.append(f"freed {sg_alloc.freed} != {our_alloc.freed}")
        sizes = (
            (sg.evictable_size(), sg.protected_size(), sg.total_size()[0]),
            (ours.evictable_size(), ours.protected_size(), ours.total_size()),
        )
        if sizes[0] != sizes[1]:
            diffs.append(f"sizes {sizes[0]} != {sizes[1]}")
        if core == "python":
            ta = ranked(unified_dump(sg.tree_core))
            tb = ranked(our_dump(ours.root_node, ours.evictable_leaves))
            if not stamps:
                ta = [row[:5] + row[7:] for row in ta]
                tb = [row[:5] + row[7:] for row in tb]
            if ta != tb:
                diffs.append(f"tree\n  sglang {ta}\n  ours   {tb}")
        ea = normalize_events(sg.take_events(), sg_names)
        if core == "rust":
            ea = coalesced(ea)
        eb = normalize_events(ours.take_events(), our_names)
        if ea != eb:
            diffs.append(f"events\n  sglang {ea}\n  ours   {eb}")
        if diffs:
            detail = "; ".join(diffs)
            return op_index + 1, (
                f"case seed={seed} core={core} page_size={page_size} policy={policy} "
                f"events={events_on}: op {op_index} {what}: {detail}"
            )
        sg_alloc.freed.clear()
        our_alloc.freed.clear()
    return num_ops, None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--ops", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--core", choices=("rust", "python"), default="rust")
    parser.add_argument(
        "--stamps", action="store_true", help="python core: compare access/creation ranks"
    )
    parser.add_argument("--show", type=int, default=3, help="differing cases to print")
    args = parser.parse_args()
    total = differed = 0
    by_policy: dict[str, int] = {}
    for case in range(args.cases):
        ops, failure = run_case(args.seed * 1_000_003 + case, args.ops, args.core, args.stamps)
        total += ops
        if failure is not None:
            differed += 1
            policy = failure.split(" policy=")[1].split()[0]
            by_policy[policy] = by_policy.get(policy, 0) + 1
            if differed <= args.show:
                print(failure)
    print(
        f"{args.cases} cases, {total} operations, {differed} differed (core={args.core})"
        + (f" by policy {dict(sorted(by_policy.items()))}" if by_policy else "")
    )
    return 1 if differed else 0


if __name__ == "__main__":
    sys.exit(main())
