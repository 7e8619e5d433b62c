"""``python -m engine --workload``: list the workload presets, or run one and print its series.

``--workload list`` prints one preset per line, name first. ``--workload NAME``
runs the preset (any knob can be changed, e.g. ``--requests 500``) and prints one
CSV line per engine step, or everything as JSON with ``--json``. ``--engine``
picks the model it runs on: vllm (the default), sglang, or both (the CSV then starts
each line with an ``engine`` column; the JSON is ``{"vllm": run, "sglang": run}``).
A bad knob or engine gets one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn, TextIO

from engine.lab.workload.presets import load_preset, preset_names
from engine.lab.workload.run import WorkloadRun
from engine.lab.workload.sglang.runner import run_sglang_workload
from engine.lab.workload.vllm.runner import run_workload
from engine.lab.workload.workload import KNOB_TYPES, Workload, WorkloadError

LIST = "list"
ENGINES = ("vllm", "sglang", "both")
RUNS: dict[str, Callable[[Workload], WorkloadRun]] = {
    "vllm": run_workload,
    "sglang": run_sglang_workload,
}


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line and exit 2, not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}\n")


def knob_option(knob: str) -> str:
    return "--" + knob.replace("_", "-")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = OneLineParser(
        prog="python -m engine",
        description="Run a workload preset untraced and print its per-step series.",
    )
    parser.add_argument("--workload", required=True, help="a preset name, or 'list'")
    parser.add_argument("--json", action="store_true", help="print JSON instead of CSV")
    parser.add_argument(
        "--engine", choices=ENGINES, default="vllm", help="the engine to run on (default vllm)"
    )
    for knob, kind in KNOB_TYPES.items():
        if kind is bool:
            parser.add_argument(
                knob_option(knob), dest=knob, action=argparse.BooleanOptionalAction, default=None
            )
        else:
            parser.add_argument(knob_option(knob), dest=knob, type=kind, default=None)
    return parser.parse_args(argv)


def main(argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    if args.workload == LIST:
        for name in preset_names():
            print(f"{name:22} {load_preset(name).title}", file=out)
        return 0
    knobs = {k: getattr(args, k) for k in KNOB_TYPES if getattr(args, k) is not None}
    try:
        workload = load_preset(args.workload).workload.replace(**knobs)
    except WorkloadError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    engines = tuple(RUNS) if args.engine == "both" else (args.engine,)
    print_runs({engine: RUNS[engine](workload) for engine in engines}, args.json, out)
    return 0


def print_runs(runs: Mapping[str, WorkloadRun], as_json: bool, out: TextIO) -> None:
    """Runs as CSV (an ``engine`` column first when there are several) or JSON (one run's
    object, or ``{engine: run}``): the workload CLI's output, the timed trace's too."""
    if len(runs) == 1:
        (run,) = runs.values()
        text = json.dumps(run.to_dict(), separators=(",", ":")) if as_json else None
        print(text or "\n".join(run.csv_lines()), file=out)
        return
    if as_json:
        both = {engine: run.to_dict() for engine, run in runs.items()}
        print(json.dumps(both, separators=(",", ":")), file=out)
        return
    lines: list[str] = []
    for engine, run in runs.items():
        header, *rows = run.csv_lines()
        lines.extend([] if lines else [f"engine,{header}"])
        lines.extend(f"{engine},{line}" for line in rows)
    print("\n".join(lines), file=out)
