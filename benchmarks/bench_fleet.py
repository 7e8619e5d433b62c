"""A whole request trace in order over a fleet of replicas behind one router.

Run: python benchmarks/bench_fleet.py [--trace content/traces/conversation_trace.jsonl.gz]
[--replicas 8] [--router prefix-aware|all] [--capacity-tokens 3000000] [--requests N]
[--repeat 1]

``--requests 300 --replicas 4 --capacity-tokens 1000000 --router all`` is the fleet lab's
default run (every router in turn, one hashing); under Pyodide:
``node benchmarks/bench_workload_node.mjs site/pyodide --script bench_fleet.py ...``.

Times, each the median of --repeat rounds: reading the trace and hashing every prompt's
blocks (vLLM's hash, each distinct block once: what the single-engine replay does too,
and what a sweep's process does once for all its points), then the fleet's run: every
request routed, served by its replica's ``VLLMReplay`` and, for a router that reads
them, the replica's KV events applied to the router's index. Prints Markdown: the times
and the run's figures. Figures, not assertions (tests/engine/test_fleet.py asserts the
behaviour).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.lab.fleet.in_order import run_fleet_in_order
from engine.lab.fleet.knobs import FleetKnobs
from engine.lab.fleet.result import FleetRun
from engine.lab.fleet.routers import ROUTER_NAMES
from engine.lab.traces.replay import PAPER_LOCAL_CACHE_TOKENS
from engine.lab.traces.request_trace import read_trace
from engine.lab.traces.vllm.replay import HashedTrace

DEFAULT_TRACE = (
    Path(__file__).resolve().parents[1] / "content" / "traces" / "conversation_trace.jsonl.gz"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--router", default="prefix-aware")
    parser.add_argument("--capacity-tokens", type=int, default=PAPER_LOCAL_CACHE_TOKENS)
    parser.add_argument("--requests", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    routers = list(ROUTER_NAMES) if args.router == "all" else [args.router]
    prepare, fleet = [], []
    run: FleetRun | None = None
    for _ in range(args.repeat):
        started = time.perf_counter()
        entries = read_trace(args.trace, args.requests)
        hashed = HashedTrace.of(entries)
        prepared = time.perf_counter()
        for router in routers:
            knobs = FleetKnobs(
                replicas=args.replicas, router=router, capacity_tokens=args.capacity_tokens
            )
            run = run_fleet_in_order(entries, knobs, hashed)
        prepare.append(prepared - started)
        fleet.append(time.perf_counter() - prepared)
    assert run is not None
    print(f"| {Path(args.trace).name}: {run.requests:,} requests | seconds |")
    print("|---|---|")
    print(f"| read and hash | {statistics.median(prepare):.1f} |")
    print(
        f"| {args.replicas} replicas, {args.router}, {args.capacity_tokens:,} tokens each "
        f"| {statistics.median(fleet):.1f} |"
    )
    print(
        f"\n{run.router}: hit rate {run.hit_rate:.4f}, busiest replica "
        f"{run.max_replica_share:.3f} of the requests, stale routes "
        f"{run.stale_routes:,} of {run.believed_routes:,} believed"
    )


if __name__ == "__main__":
    main()
