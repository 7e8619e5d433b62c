"""The lab's rerun when a knob changes: what the learner waits for before the charts move.

Run: python benchmarks/bench_lab_rerun.py [--preset shared-prefix] [--repeat 3] [--sides 1]

Times, for the preset's own knobs (200 requests for shared-prefix) with its overlay:
the first run (both runs played, every prompt new), the output length changed (both
runs play; their prompts' block hashes are kept from the first:
engine/lab/workload/prompt_hashes.py),
a knob the overlay overrides changed (the salt: the overlay's run is reused, only the
learner's run plays, its prompts new), and the knob set back (both runs reused).
With --sides N the overlay's run plays in N side processes (app/data/side_runs.py), as on
`panel serve`, started anew (their prompt hashes empty) and ready before each repeat.
Each time includes turning the runs into chart columns. Figures, not
assertions; the Bokeh update itself is not included (benchmarks/bench_lab_knob.py
measures the whole change in a browser).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.data.lab import FinishedRuns, LabRun, chart_data
from app.data.side_runs import SideRuns
from app.views.lab_charts import CHART_COLUMNS
from engine.lab.workload.presets import load_preset
from engine.lab.workload.prompt_hashes import PROMPT_HASHES
from engine.lab.workload.workload import Workload


def rerun_seconds(name: str, workload: Workload, finished: FinishedRuns, side: SideRuns) -> float:
    start = time.perf_counter()
    lab_run = LabRun(load_preset(name), workload, True, finished, side=side)
    result = asyncio.run(lab_run.play(lambda _: None))
    assert result is not None
    chart_data(result.run, CHART_COLUMNS), chart_data(result.compare, CHART_COLUMNS)
    return time.perf_counter() - start


def ready_sides(processes: int) -> SideRuns:
    side = SideRuns(processes)
    side.start()
    while processes and not side.ready:
        time.sleep(0.01)
    return side


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--preset", default="shared-prefix")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sides", type=int, default=0, help="side processes (0: none)")
    args = parser.parse_args(argv)
    workload = load_preset(args.preset).workload
    longer = workload.replace(output_tokens=workload.output_tokens + 1)
    changed = workload.replace(salt="fixed" if workload.salt != "fixed" else "none")
    cases: dict[str, list[float]] = {
        "first run (both runs play, prompts new)": [],
        "output length changed (both runs play, prompts known)": [],
        "salt changed (overlay reused)": [],
        "salt set back (both reused)": [],
    }
    for _ in range(args.repeat):
        finished = FinishedRuns()
        PROMPT_HASHES.clear()
        side = ready_sides(args.sides)
        for times, knobs in zip(cases.values(), (workload, longer, changed, workload), strict=True):
            times.append(rerun_seconds(args.preset, knobs, finished, side))
        side.close()
    where = f", {args.sides} side processes" if args.sides else ""
    print(f"| `{args.preset}`, {workload.requests:,} requests{where} | median of {args.repeat} |")
    print("|---|---|")
    for case, times in cases.items():
        print(f"| {case} | {statistics.median(times) * 1000:,.0f} ms |")


if __name__ == "__main__":
    main()
