"""``python -m engine --workload``: list the workload presets, or run one and print its series.

``--workload list`` prints one preset per line, name first. ``--workload NAME``
runs the preset (any knob can be changed, e.g. ``--requests 500``) and prints one
CSV line per engine step, or everything as JSON with ``--json``. A bad knob gets
one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

from engine.lab.workload import KNOB_TYPES, WorkloadError, load_preset, preset_names, run_workload

LIST = "list"


class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line and exit 2, not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}\n")


def knob_option(knob: str) -> str:
    return "--" + knob.replace("_", "-")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = _OneLineParser(
        prog="python -m engine",
        description="Run a workload preset untraced and print its per-step series.",
    )
    parser.add_argument("--workload", required=True, help="a preset name, or 'list'")
    parser.add_argument("--json", action="store_true", help="print JSON instead of CSV")
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
    run = run_workload(workload)
    if args.json:
        print(json.dumps(run.to_dict(), separators=(",", ":")), file=out)
    else:
        print("\n".join(run.csv_lines()), file=out)
    return 0
