"""``python -m engine --trace FILE``: replay a request trace (Mooncake's JSON lines) in order.

Prints one CSV line per capacity, header first (``--capacity-tokens`` takes one or more; by
default eight, log-spaced from half a mean prompt to the whole trace), or one line per
request with ``--per-request``, or everything as JSON with ``--json`` (with the
unlimited-capacity hit rate beside the Mooncake paper's cache ratio when the file is one
of its traces). ``--timed`` replays with time instead, at the first capacity, one CSV line
per engine step. A bad file or argument: one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from engine.lab.request_trace import TRACE_BLOCK_TOKENS, TraceError, read_trace
from engine.lab.trace_replay import (
    DEFAULT_STEP_MS,
    POINT_COLUMNS,
    REQUEST_COLUMNS,
    HashedTrace,
    InOrderReplay,
    default_capacities,
    hit_rate_curve,
    paper_comparison,
    replay_in_order,
    replay_with_time,
    slice_entries,
    trace_name_of,
)


class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line and exit 2, not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}\n")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = _OneLineParser(
        prog="python -m engine --trace",
        description="Replay a request trace through the engine's prefix cache.",
    )
    parser.add_argument("--trace", required=True, metavar="FILE", help="JSON lines, or .gz")
    parser.add_argument(
        "--capacity-tokens", type=_positive, nargs="+", metavar="N", help="pool sizes in tokens"
    )
    parser.add_argument("--block-size", type=_positive, default=TRACE_BLOCK_TOKENS)
    parser.add_argument("--requests", type=_positive, help="replay only the first N requests")
    parser.add_argument(
        "--until-ms", type=_positive, help="replay only requests arriving before this (ms)"
    )
    parser.add_argument("--per-request", action="store_true", help="one line per request")
    parser.add_argument("--json", action="store_true", help="print JSON instead of CSV")
    parser.add_argument("--timed", action="store_true", help="replay with arrival times")
    parser.add_argument("--step-ms", type=float, default=DEFAULT_STEP_MS, help="ms per step")
    parser.add_argument("--max-num-batched-tokens", type=_positive, default=2048)
    return parser.parse_args(argv)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, bool):
        return str(int(value))
    return str(value)


def _csv(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[str]:
    return [",".join(columns), *(",".join(_cell(row[c]) for c in columns) for row in rows)]


def main(argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    try:
        entries = slice_entries(read_trace(args.trace, args.requests), until_ms=args.until_ms)
    except (TraceError, OSError) as error:
        print(f"error: {args.trace}: {error}", file=sys.stderr)
        return 2
    too_small = [c for c in args.capacity_tokens or () if c < args.block_size]
    if too_small:  # said before the prompts are hashed
        print(
            f"error: capacity {too_small[0]} holds no {args.block_size}-token block",
            file=sys.stderr,
        )
        return 2
    trace = HashedTrace.of(entries, args.block_size)
    capacities = args.capacity_tokens or default_capacities(trace)
    if args.timed:
        timed = replay_with_time(trace, capacities[0], args.step_ms, args.max_num_batched_tokens)
        if args.json:
            print(json.dumps(timed.to_dict(), separators=(",", ":")), file=out)
        else:
            print("\n".join(timed.csv_lines()), file=out)
        return 0
    if args.per_request:
        points = [replay_in_order(trace, capacity, per_request=True) for capacity in capacities]
    else:
        points = []
        for point in hit_rate_curve(trace, capacities):
            points.append(point)
            if not args.json:  # each line as its replay ends
                if len(points) == 1:
                    print(",".join(POINT_COLUMNS), file=out)
                print(_csv(POINT_COLUMNS, [point.row()])[1], file=out, flush=True)
        if not args.json:
            return 0
    if args.json:
        print(json.dumps(_json(args.trace, trace, points), separators=(",", ":")), file=out)
        return 0
    columns = ("capacity_tokens", *REQUEST_COLUMNS)
    rows = [
        {"capacity_tokens": point.capacity_tokens, **vars(request)}
        for point in points
        for request in point.per_request
    ]
    print("\n".join(_csv(columns, rows)), file=out)
    return 0


def _json(path: str, trace: HashedTrace, points: list[InOrderReplay]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "trace": path,
        "requests": len(trace.entries),
        "prompt_tokens": trace.prompt_tokens,
        "block_size": trace.block_size,
        "whole_trace_capacity": trace.whole_trace_capacity,
        "points": [point.row() for point in points],
    }
    whole = [p for p in points if p.capacity_tokens >= trace.whole_trace_capacity]
    if whole:
        data["unlimited"] = paper_comparison(trace_name_of(path), whole[0])
    if any(point.per_request for point in points):
        data["per_request"] = {
            str(point.capacity_tokens): [vars(r) for r in point.per_request] for point in points
        }
    return data
