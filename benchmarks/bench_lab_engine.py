"""The engine's part of a lab knob change: the learner's run played again, nothing else.

Run: python benchmarks/bench_lab_engine.py [--preset shared-prefix] [--repeat 7]
and under Pyodide 0.27.7 in Node:
node benchmarks/bench_workload_node.mjs site/pyodide --script bench_lab_engine.py [...]

Plays the preset's workload once (its prompts' block hashes are then known, as in the
lab after its first run: engine/lab/workload/prompt_hashes.py), then --repeat times with the
output length one token longer each time (prompts known), and --repeat times with
the unique part one token longer (every prompt new). Each time is split into building
the runner (the scheduler and its pool) and playing it to the end; the collector is
off, as in the lab (app/data/lab.py cycle_collector_paused). Standard library and engine
only, so it runs unchanged in Pyodide. Figures, not assertions; the app's share
(chart columns, the Bokeh update, the browser's repaint) is measured by
bench_lab_rerun.py and bench_lab_knob.py.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.lab.workload.presets import load_preset
from engine.lab.workload.vllm.runner import WorkloadRunner
from engine.lab.workload.workload import Workload


def timed_run(workload: Workload) -> tuple[float, float]:
    """Seconds to build the runner, and to play it to the end."""
    start = time.perf_counter()
    runner = WorkloadRunner(workload)
    built = time.perf_counter()
    while not runner.prepare(workload.requests):
        pass
    while not runner.done:
        runner.advance(10_000)
    runner.result()
    played = time.perf_counter()
    runner.release()
    return built - start, played - built


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--preset", default="shared-prefix")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    workload = load_preset(args.preset).workload
    timed_run(workload)  # the first run: its prompts' hashes are kept
    gc.disable()
    cases = {"output length changed (prompts known)": "output_tokens"}
    cases["unique part changed (prompts new)"] = "unique_tokens"
    print(
        f"| `{args.preset}`, {workload.requests:,} requests, {sys.implementation.name} "
        f"{sys.version.split()[0]} ({sys.platform}) | build the runner | play it |"
    )
    print("|---|---|---|")
    for case, knob in cases.items():
        builds, plays = [], []
        changed = workload
        for _ in range(args.repeat):
            changed = changed.replace(**{knob: getattr(changed, knob) + 1})
            build, play = timed_run(changed)
            builds.append(build * 1000)
            plays.append(play * 1000)
        print(
            f"| {case}, median (range) of {args.repeat} | {statistics.median(builds):.0f} "
            f"({min(builds):.0f}-{max(builds):.0f}) ms | {statistics.median(plays):.0f} "
            f"({min(plays):.0f}-{max(plays):.0f}) ms |"
        )
    gc.enable()


if __name__ == "__main__":
    main()
