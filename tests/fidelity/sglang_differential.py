"""Differential check: random call traces through SGLang 0.5.23's real RadixCache and ours.

Runs under a Python that can import SGLang (see tests/fidelity/sglang-venv.md), e.g.

    /tmp/sglang-venv/bin/python tests/fidelity/sglang_differential.py --cases 200 --seed 0

Each case draws a page size (1 or 16), an eviction policy and a trace of calls:
inserts of sequences sharing prefixes (some under an extra_key), matches that split
nodes, a match followed by inc_lock_ref (as the scheduler locks a request's path),
dec_lock_ref of a held lock, evict(N) and reset. Both trees get the same calls; after
every call the results, the freed slots, the whole tree (keys, values, lock refs,
access and creation times, hit counts, evictable leaves; the root's too), the sizes and
the KV events (hashes renamed by first appearance: the two sides hash differently) are
compared.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import types
import warnings
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
warnings.filterwarnings("ignore")

import sglang.srt.mem_cache.radix_cache as sg_radix  # noqa: E402
import torch  # noqa: E402
from sglang.srt.disaggregation import kv_events as sg_events  # noqa: E402
from sglang.srt.mem_cache.base_prefix_cache import (  # noqa: E402
    EvictParams,
    InsertParams,
    MatchPrefixParams,
)

from engine.sglang import kv_events as our_events  # noqa: E402
from engine.sglang.radix_cache import RadixCache, RadixKey  # noqa: E402

POLICIES = ("lru", "lru", "lru", "lfu", "fifo", "mru", "filo", "slru")


class Clock:
    """A strictly increasing stand-in for time.monotonic(): no two stamps tie."""

    def __init__(self) -> None:
        self.ticks = itertools.count(1)

    def __call__(self) -> float:
        return float(next(self.ticks))


class RecordingAllocator:
    """Records every free_segment call (the tree's only call into the pool)."""

    device = "cpu"

    def __init__(self) -> None:
        self.freed: list[list[int]] = []

    def free_segment(self, free_index: Any, *, start_pos: int) -> None:
        assert start_pos == 0
        items = free_index.tolist() if hasattr(free_index, "tolist") else list(free_index)
        self.freed.append([int(x) for x in items])


def node_row(node: Any, depth: int, evictable: set[Any]) -> tuple[Any, ...]:
    value = node.value.tolist() if hasattr(node.value, "tolist") else node.value
    return (
        depth,
        list(node.key.token_ids),
        node.key.extra_key,
        [int(v) for v in value],
        node.lock_ref,
        node.last_access_time,
        node.creation_time,
        node.hit_count,
        node.priority,
        node in evictable,
    )


def dump(root: Any, evictable: set[Any]) -> list[Any]:
    """The tree, the root first (depth -1): its stamps, lock and priority too."""
    out: list[Any] = [node_row(root, -1, evictable)]

    def walk(node: Any, depth: int) -> None:
        for child in node.children.values():
            out.append(node_row(child, depth, evictable))
            walk(child, depth + 1)

    walk(root, 0)
    return out


def normalize_events(events: list[Any], names: dict[int, int]) -> list[Any]:
    def name(h: int | None) -> int | None:
        if h is None:
            return None
        return names.setdefault(h, len(names))

    out: list[Any] = []
    for e in events:
        kind = type(e).__name__
        if kind == "BlockStored":
            out.append(
                (
                    kind,
                    [name(h) for h in e.block_hashes],
                    name(e.parent_block_hash),
                    [int(t) for t in e.token_ids],
                    e.block_size,
                )
            )
        elif kind == "BlockRemoved":
            out.append((kind, [name(h) for h in e.block_hashes]))
        else:
            out.append((kind,))
    return out


@dataclass(frozen=True)
class Call:
    """One call of a random trace, drawn before either tree runs it."""

    kind: str  # insert | match | dec_lock_ref | evict | reset
    tokens: list[int] = field(default_factory=list)
    extra_key: str | None = None
    values: list[int] = field(default_factory=list)  # insert: the slots
    priority: int = 0  # insert
    lock: bool = False  # match: then inc_lock_ref on its last node
    index: int = 0  # dec_lock_ref: which held lock (they are kept in the order taken)
    num_tokens: int = 0  # evict

    @property
    def what(self) -> str:
        if self.kind in ("insert", "match"):
            locked = " + inc_lock_ref" if self.lock else ""
            return f"{self.kind} {self.tokens} extra_key={self.extra_key}{locked}"
        return f"evict {self.num_tokens}" if self.kind == "evict" else self.kind


@dataclass(frozen=True)
class Case:
    page_size: int
    policy: str
    events_on: bool
    calls: Iterator[Call]


def random_case(seed: int, num_ops: int) -> Case:
    """A page size, an eviction policy, events on or off and a trace of calls: inserts of
    sequences sharing prefixes (some under an extra_key), matches (some then locked),
    unlocks of held locks, evictions and resets."""
    rng = random.Random(seed)
    page_size = rng.choice((1, 1, 16))
    policy = rng.choice(POLICIES)
    events_on = rng.random() < 0.5
    unit = page_size
    vocab = rng.choice((3, 5, 50))
    bases = [[rng.randrange(vocab) for _ in range(rng.randrange(1, 5) * unit)] for _ in range(4)]
    extra_keys = (None, None, None, "lora-a", "lora-b")

    def sequence() -> tuple[list[int], str | None]:
        tokens = list(rng.choice(bases)) if rng.random() < 0.8 else []
        if tokens and rng.random() < 0.4:
            tokens = tokens[: rng.randrange(len(tokens) + 1)]
        tokens += [rng.randrange(vocab) for _ in range(rng.randrange(0, 4 * unit + 3))]
        return tokens, rng.choice(extra_keys)

    def calls() -> Iterator[Call]:
        slots = itertools.count(1000)
        held = 0
        for _ in range(num_ops):
            r = rng.random()
            if r < 0.35:
                tokens, extra = sequence()
                values = [next(slots) for _ in tokens]
                priority = rng.randrange(3) if policy == "priority" else 0
                yield Call("insert", tokens, extra, values, priority)
            elif r < 0.6:
                tokens, extra = sequence()
                lock = rng.random() < 0.6
                held += lock
                yield Call("match", tokens, extra, lock=lock)
            elif r < 0.8 and held:
                held -= 1
                yield Call("dec_lock_ref", index=rng.randrange(held + 1))
            elif r < 0.98:
                yield Call("evict", num_tokens=rng.randrange(0, 6 * unit + 1))
            else:
                held = 0
                yield Call("reset")

    return Case(page_size, policy, events_on, calls())


def run_case(seed: int, num_ops: int) -> tuple[int, str | None]:
    case = random_case(seed, num_ops)
    page_size, policy, events_on = case.page_size, case.policy, case.events_on
    sg_clock, our_clock = Clock(), Clock()
    sg_radix.time = types.SimpleNamespace(monotonic=sg_clock, perf_counter=lambda: 0.0)
    sg_alloc, our_alloc = RecordingAllocator(), RecordingAllocator()
    sg = sg_radix.RadixCache.create_simulated(
        mock_allocator=sg_alloc, page_size=page_size, enable_kv_cache_events=events_on
    )
    if policy != "lru":
        sg.eviction_policy = policy
        sg.eviction_strategy = sg_radix.get_eviction_strategy(policy)
    ours = RadixCache(
        our_alloc,
        page_size=page_size,
        eviction_policy=policy,
        enable_kv_cache_events=events_on,
        clock=our_clock,
    )
    held: list[tuple[Any, Any]] = []
    sg_names: dict[int, int] = {}
    our_names: dict[int, int] = {}

    for op_index, call in enumerate(case.calls):
        tokens, extra, what = call.tokens, call.extra_key, call.what
        got: tuple[Any, Any]
        if call.kind == "insert":
            a = sg.insert(
                InsertParams(
                    key=sg_key(tokens, extra),
                    value=torch.tensor(call.values, dtype=torch.int64),
                    priority=call.priority,
                )
            )
            b = ours.insert(RadixKey(tokens, extra), call.values, priority=call.priority)
            got = (a.prefix_len, b.prefix_len)
        elif call.kind == "match":
            a = sg.match_prefix(MatchPrefixParams(key=sg_key(tokens, extra)))
            b = ours.match_prefix(RadixKey(tokens, extra))
            got = (a.device_prefix_len, b.device_prefix_len)
            if call.lock:
                da = sg.inc_lock_ref(a.last_device_node).delta
                db = ours.inc_lock_ref(b.last_device_node)
                held.append((a.last_device_node, b.last_device_node))
                got = ((got[0], da), (got[1], db))
        elif call.kind == "dec_lock_ref":
            pair = held.pop(call.index)
            got = (sg.dec_lock_ref(pair[0]).delta, ours.dec_lock_ref(pair[1]))
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
            (sg.evictable_size(), sg.protected_size(), sg.total_size()),
            (ours.evictable_size(), ours.protected_size(), ours.total_size()),
        )
        if sizes[0] != sizes[1]:
            diffs.append(f"sizes {sizes[0]} != {sizes[1]}")
        ta = dump(sg.root_node, sg.evictable_leaves)
        tb = dump(ours.root_node, ours.evictable_leaves)
        if ta != tb:
            diffs.append(f"tree\n  sglang {ta}\n  ours   {tb}")
        ea = normalize_events(sg.take_events(), sg_names)
        eb = normalize_events(ours.take_events(), our_names)
        if ea != eb:
            diffs.append(f"events\n  sglang {ea}\n  ours   {eb}")
        if diffs:
            detail = "; ".join(diffs)
            return op_index + 1, (
                f"case seed={seed} page_size={page_size} policy={policy} events={events_on}: "
                f"op {op_index} {what}: {detail}"
            )
        sg_alloc.freed.clear()
        our_alloc.freed.clear()
    return num_ops, None


def sg_key(tokens: list[int], extra: str | None) -> Any:
    return sg_radix.RadixKey(token_ids=array("q", tokens), extra_key=extra)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--ops", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    assert our_events.BlockStored.__name__ == sg_events.BlockStored.__name__
    total = differed = 0
    for case in range(args.cases):
        ops, failure = run_case(args.seed * 1_000_003 + case, args.ops)
        total += ops
        if failure is not None:
            differed += 1
            if differed <= 3:
                print(failure)
    print(f"{args.cases} cases, {total} operations, {differed} differed")
    return 1 if differed else 0


if __name__ == "__main__":
    sys.exit(main())
