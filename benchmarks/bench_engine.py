"""Engine speed: pool operations per second, and timeline build time per scenario and mode.

Run: python benchmarks/bench_engine.py [--seconds N]. Prints a Markdown table for
the README. Figures, not assertions: a noisy machine must not fail a test run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.vllm.timeline import build_timeline
from engine.vllm.kv_cache_manager import KVCacheManager
from engine.vllm.kv_cache_utils import get_request_block_hasher, sha256
from engine.vllm.request import Request

NUM_BLOCKS = 10_000
BLOCK_SIZE = 16


def pool_workload(seconds: float, seed: int = 0) -> tuple[int, int, float]:
    """Admit and free random requests over a few shared prefixes.

    Only the time spent inside the manager and pool is counted (hashing the
    prompts is the request's job, done before). Returns the pool calls made
    (get_new_blocks, touch, free_blocks, cache_full_blocks), the blocks they
    handled, and the seconds they took.
    """
    rng = random.Random(seed)
    manager = KVCacheManager(NUM_BLOCKS, BLOCK_SIZE, enable_kv_cache_events=False)
    pool = manager.block_pool
    hasher = get_request_block_hasher(BLOCK_SIZE, sha256)
    prefixes = [[rng.randrange(32_000) for _ in range(512)] for _ in range(8)]
    counts = {"calls": 0, "blocks": 0}
    for name in ("get_new_blocks", "touch", "free_blocks", "cache_full_blocks"):
        original = getattr(pool, name)

        def counted(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            counts["calls"] += 1
            first = args[0] if args else None
            if isinstance(first, int):
                counts["blocks"] += first
            elif first is not None and hasattr(first, "__len__"):
                counts["blocks"] += len(first)
            return _original(*args, **kwargs)

        setattr(pool, name, counted)
    running: list[Request] = []
    busy = 0.0
    n = 0
    wall = time.perf_counter()
    while busy < seconds and time.perf_counter() - wall < 10 * seconds:
        n += 1
        if running and (rng.random() < 0.45 or pool.get_num_free_blocks() < 400):
            victim = running.pop(rng.randrange(len(running)))
            start = time.perf_counter()
            manager.free(victim)
            busy += time.perf_counter() - start
            continue
        prompt = rng.choice(prefixes)[: rng.randrange(16, 512)] + [
            rng.randrange(32_000) for _ in range(rng.randrange(1, 256))
        ]
        request = Request(f"r{n}", prompt, block_hasher=hasher)
        start = time.perf_counter()
        computed, hit = manager.get_computed_blocks(request)
        admitted = manager.allocate_slots(request, request.num_tokens - hit, hit, computed)
        busy += time.perf_counter() - start
        if admitted is not None:
            running.append(request)
    return counts["calls"], counts["blocks"], busy


def timeline_times(repeats: int) -> list[tuple[str, str, float, float]]:
    rows = []
    for name in scenario_names():
        scenario = load_scenario(name)
        for mode in scenario.modes:
            timed = []
            for trace in (False, True):
                samples = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    build_timeline(scenario, mode, trace=trace)
                    samples.append(time.perf_counter() - start)
                timed.append(statistics.median(samples) * 1000)
            rows.append((name, mode, timed[0], timed[1]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    calls, blocks, busy = pool_workload(args.seconds)
    print(
        f"pool on {NUM_BLOCKS:,} blocks (block size {BLOCK_SIZE}): {calls / busy:,.0f} "
        f"operations/s, {blocks / busy:,.0f} blocks/s ({calls:,} operations in {busy:.1f} s)"
    )
    print("\n| scenario | mode | build, untraced (ms) | build, traced (ms) |")
    print("|---|---|---:|---:|")
    for name, mode, plain, traced in timeline_times(args.repeats):
        print(f"| {name} | {mode} | {plain:.1f} | {traced:.1f} |")


if __name__ == "__main__":
    main()
