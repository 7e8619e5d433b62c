"""``python -m engine --fleet``: a fleet of replicas behind a router (engine/lab/fleet/).

``--trace FILE`` replays a request trace in order through the fleet (``--timed``: a
slice with time, by its timestamps), ``--workload PRESET`` plays a workload preset with
time. ``--replicas``, ``--router`` and ``--capacity-tokens`` take one value or several:
every combination is a point of a sweep, one CSV line each (``--json``: a list of
objects with each replica's figures and the series). ``--jobs N`` runs the points in N
processes. A bad file or argument: one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from engine.lab.cli.traces import _positive, _step_ms, _window
from engine.lab.cli.workload import OneLineParser
from engine.lab.fleet.knobs import ENGINES, MAX_REPLICAS, FleetKnobs
from engine.lab.fleet.result import ROW_COLUMNS
from engine.lab.fleet.routers import DEFAULT_LOAD_WEIGHT, ROUTER_NAMES
from engine.lab.fleet.sweep import Source, run_sweep, sweep_points
from engine.lab.traces.replay import PAPER_LOCAL_CACHE_TOKENS
from engine.lab.traces.request_trace import TraceError
from engine.lab.traces.timed import DEFAULT_STEP_MS
from engine.lab.workload.workload import WorkloadError

ALL = "all"


def _replicas(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_REPLICAS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_REPLICAS}, not {value}")
    return value


def _router(text: str) -> str:
    if text != ALL and text not in ROUTER_NAMES:
        raise argparse.ArgumentTypeError(
            f"must be one of {', '.join(ROUTER_NAMES)} or {ALL}, not {text!r}"
        )
    return text


def _weight(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, not {text!r}")
    return value


def _delay(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = OneLineParser(
        prog="python -m engine --fleet",
        description="Route a trace or a workload over a fleet of replicas.",
    )
    parser.add_argument("--fleet", action="store_true", required=True)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", metavar="FILE", help="a request trace (Mooncake's format)")
    source.add_argument("--workload", metavar="PRESET", help="a workload preset")
    parser.add_argument("--replicas", type=_replicas, nargs="+", default=[4])
    parser.add_argument(
        "--router", type=_router, nargs="+", default=["round-robin"], help="or 'all'"
    )
    parser.add_argument("--capacity-tokens", type=_positive, nargs="+", default=None)
    parser.add_argument("--engine", choices=ENGINES, default="vllm")
    parser.add_argument("--block-size", type=_positive, default=None)
    parser.add_argument("--requests", type=_positive, default=None)
    parser.add_argument("--window-ms", type=_window, default=None)
    parser.add_argument("--timed", action="store_true", help="a trace slice with time")
    parser.add_argument("--step-ms", type=_step_ms, default=DEFAULT_STEP_MS)
    parser.add_argument("--load-weight", type=_weight, default=DEFAULT_LOAD_WEIGHT)
    parser.add_argument("--load-window", type=_positive, default=None)
    parser.add_argument("--event-delay", type=_delay, default=0)
    parser.add_argument("--jobs", type=_positive, default=1, help="processes for the points")
    parser.add_argument("--json", action="store_true", help="print JSON instead of CSV")
    return parser.parse_args(argv)


def main(argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    if args.workload is not None and (args.timed or args.requests or args.window_ms):
        print("error: --timed, --requests and --window-ms are for --trace", file=sys.stderr)
        return 2
    source = Source(args.trace, args.workload, args.requests, args.window_ms, args.timed)
    routers = list(ROUTER_NAMES) if ALL in args.router else list(dict.fromkeys(args.router))
    capacities: list[int | None] = list(args.capacity_tokens or [])
    if not capacities:
        capacities = [None if args.workload else PAPER_LOCAL_CACHE_TOKENS]
    base = FleetKnobs(
        engine=args.engine,
        block_size=args.block_size,
        load_weight=args.load_weight,
        event_delay=args.event_delay,
        step_ms=args.step_ms,
        load_window=args.load_window,
    )
    points = sweep_points(base, routers, args.replicas, capacities)
    try:
        runs = run_sweep(source, points, args.jobs)
    except (TraceError, WorkloadError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([run.to_dict() for run in runs], separators=(",", ":")), file=out)
    else:
        print(",".join(ROW_COLUMNS), file=out)
        for run in runs:
            print(run.csv_line(), file=out)
    return 0
