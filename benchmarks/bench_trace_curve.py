"""A trace's hit-rate curve (8 capacities, the CLI's default) on each engine: issue 32
item 6's "the synthetic trace's curve within 20 s in Pyodide".

Run: python benchmarks/bench_trace_curve.py [--trace FILE] [--engine vllm|sglang|both]
[--repeat 3]; in Pyodide: node benchmarks/bench_workload_node.mjs site/pyodide --script
bench_trace_curve.py [the same arguments].

Each round reads the trace, then replays the curve (vLLM: hashes once, then each capacity;
SGLang: each capacity). Prints wall time and CPU time (the process's own: on a shared
machine the wall time also counts the time others held the cores), the median and range
of --repeat rounds, then each point's hits, so two versions of the replay can be checked to
give the same curve. In Pyodide the CPU column is n/a (its ``process_time`` is always 0):
run node under ``/usr/bin/time`` and take off Pyodide's start (about 2.2 s of CPU here).
Figures, not assertions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.lab.traces.replay import InOrderReplay, capacities_for
from engine.lab.traces.request_trace import read_trace
from engine.lab.traces.sglang.replay import hit_rate_curve_sglang
from engine.lab.traces.vllm.replay import HashedTrace, hit_rate_curve

DEFAULT_TRACE = (
    Path(__file__).resolve().parents[1] / "content" / "traces" / "synthetic_trace.jsonl.gz"
)


def curve(trace: str, engine: str) -> list[InOrderReplay]:
    entries = read_trace(trace)
    capacities = capacities_for(entries)
    if engine == "vllm":
        return list(hit_rate_curve(HashedTrace.of(entries), capacities))
    return list(hit_rate_curve_sglang(entries, capacities))


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--engine", choices=("vllm", "sglang", "both"), default="both")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    engines = ("vllm", "sglang") if args.engine == "both" else (args.engine,)
    print(
        f"{Path(args.trace).name}, 8-capacity curve, {sys.version.split()[0]} "
        f"({sys.platform}), median (range) of {args.repeat}"
    )
    print("| engine | wall | CPU |\n|---|---|---|")
    points: dict[str, list[InOrderReplay]] = {}
    for engine in engines:
        walls, cpus = [], []
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            points[engine] = curve(args.trace, engine)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        # Pyodide's process_time is always 0: time the node process instead (docs/figures.md).
        cpu = "n/a" if sys.platform == "emscripten" else spread(cpus)
        print(f"| {engine} | {spread(walls)} | {cpu} |", flush=True)
    for engine, replays in points.items():
        hits = ", ".join(f"{p.capacity_tokens}: {p.hits}/{p.uncapped_hits}" for p in replays)
        print(f"{engine} hits (capacity: hits/uncapped): {hits}")


if __name__ == "__main__":
    main()
