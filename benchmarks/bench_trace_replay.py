"""A whole request trace replayed in order through both engines, beside a plain LRU floor.

Run: python benchmarks/bench_trace_replay.py [--trace content/traces/conversation_trace.jsonl.gz]
[--capacity-tokens 3000000] [--points 8] [--repeat 3]

Times, each the median of --repeat rounds (a fresh process state is not needed: nothing is
kept between rounds but the file's bytes in the OS cache):

- one capacity, cold: read the trace, hash every prompt's blocks (vLLM's hash over the
  derived tokens, each distinct block once), replay it in order at --capacity-tokens;
- the curve: the same read and hashing once, then --points capacities (the CLI's default,
  log-spaced from half a mean prompt to the whole trace);
- SGLang: the same, through SGLang's RadixCache and token pool at page size 1 (no hashing:
  the tree keys token ids; read, then replay);
- the floor: a plain dict + OrderedDict LRU over the trace's hash ids at the same
  capacities (no hashing: the ids are the keys), the least any replay could cost in CPython.

Then the hit rates: vLLM's (what it reuses, and uncapped), SGLang's, the floor's and its
difference from vLLM's, and at the whole-trace capacity each engine's hit rate beside the
paper's cache ratio with the gap's causes (engine/lab/traces/paper_gap.py).
Prints Markdown. Figures, not assertions (tests/engine/test_trace_replay.py asserts the
floor's agreement on slices).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.lab.traces.paper_gap import paper_gap
from engine.lab.traces.replay import PAPER_CACHE_RATIO, InOrderReplay, lru_floor, trace_name_of
from engine.lab.traces.request_trace import read_trace
from engine.lab.traces.sglang.replay import hit_rate_curve_sglang, replay_in_order_sglang
from engine.lab.traces.vllm.replay import (
    HashedTrace,
    default_capacities,
    hit_rate_curve,
    replay_in_order,
)

DEFAULT_TRACE = (
    Path(__file__).resolve().parents[1] / "content" / "traces" / "conversation_trace.jsonl.gz"
)
T = TypeVar("T")


def timed(work: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def median_range(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--capacity-tokens", type=int, default=3_000_000)
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    parts: dict[str, list[float]] = {
        name: []
        for name in (
            "read",
            "hash",
            "replay",
            "one",
            "curve",
            "floor one",
            "floor curve",
            "sglang one",
            "sglang curve",
        )
    }
    point: InOrderReplay | None = None
    curve: list[InOrderReplay] = []
    sglang_point: InOrderReplay | None = None
    sglang_curve: list[InOrderReplay] = []
    capacities: list[int] = []
    for _ in range(args.repeat):
        read, entries = timed(lambda: read_trace(args.trace))
        hashed_time, hashed = timed(lambda: HashedTrace.of(entries))  # noqa: B023
        replayed, point = timed(lambda: replay_in_order(hashed, args.capacity_tokens))  # noqa: B023
        parts["read"].append(read)
        parts["hash"].append(hashed_time)
        parts["replay"].append(replayed)
        parts["one"].append(read + hashed_time + replayed)
        capacities = default_capacities(hashed, args.points)
        curve_time, curve = timed(lambda: list(hit_rate_curve(hashed, capacities)))  # noqa: B023
        parts["curve"].append(read + hashed_time + curve_time)
        parts["floor one"].append(timed(lambda: lru_floor(entries, args.capacity_tokens))[0])  # noqa: B023
        parts["floor curve"].append(
            timed(lambda: [lru_floor(entries, c) for c in capacities])[0]  # noqa: B023
        )
        sglang_time, sglang_point = timed(
            lambda: replay_in_order_sglang(entries, args.capacity_tokens)  # noqa: B023
        )
        parts["sglang one"].append(read + sglang_time)
        sglang_curve_time, sglang_curve = timed(
            lambda: list(hit_rate_curve_sglang(entries, capacities))  # noqa: B023
        )
        parts["sglang curve"].append(read + sglang_curve_time)
    assert point is not None and sglang_point is not None
    entries = read_trace(args.trace)
    name = trace_name_of(args.trace)
    print(
        f"`{name}`: {len(entries):,} requests, {point.prompt_tokens:,} prompt tokens, "
        f"{sys.implementation.name} {sys.version.split()[0]}, median (range) of {args.repeat}\n"
    )
    print(
        "| | vLLM (KVCacheManager, BlockPool) | SGLang (RadixCache, token pool) | plain LRU floor |"
    )
    print("|---|---|---|---|")
    print(
        f"| one capacity ({args.capacity_tokens:,} tokens), cold | {median_range(parts['one'])}: "
        f"read {median_range(parts['read'])}, hash {median_range(parts['hash'])}, replay "
        f"{median_range(parts['replay'])} | {median_range(parts['sglang one'])} | "
        f"{median_range(parts['floor one'])} |"
    )
    print(
        f"| {len(capacities)}-capacity curve, cold | {median_range(parts['curve'])} | "
        f"{median_range(parts['sglang curve'])} | {median_range(parts['floor curve'])} |"
    )
    print(
        "\n| capacity (tokens) | vLLM | uncapped | SGLang | uncapped | floor "
        "| floor - vLLM (tokens) | evicted tokens vLLM / SGLang |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    sglang_at = {p.capacity_tokens: p for p in [sglang_point, *sglang_curve]}
    for replay in [point, *curve]:
        floor = lru_floor(entries, replay.capacity_tokens)
        other = sglang_at[replay.capacity_tokens]
        print(
            f"| {replay.capacity_tokens:,} | {replay.hit_rate:.2%} | "
            f"{replay.uncapped_hit_rate:.2%} | {other.hit_rate:.2%} | "
            f"{other.uncapped_hit_rate:.2%} | {floor.hit_rate:.2%} | "
            f"{floor.hits - replay.hits:,} | {replay.evicted_tokens:,} / {other.evicted_tokens:,} |"
        )
    paper = PAPER_CACHE_RATIO.get(name)
    for unlimited in (curve[-1], sglang_curve[-1]):
        gap = paper_gap(entries, unlimited, paper)
        print(
            f"\n{unlimited.engine}, whole trace ({unlimited.capacity_tokens:,} tokens, "
            f"{unlimited.evictions} evictions): {unlimited.hit_rate:.2%} reused "
            f"({unlimited.uncapped_hit_rate:.2%} uncapped)"
            + (f"; the paper's cache ratio: {paper:.0%}" if paper is not None else "")
            + f"; causes in tokens: {gap.to_dict()}"
        )


if __name__ == "__main__":
    main()
