"""``python -m engine --trace FILE``: replay a request trace (Mooncake's JSON lines) in order.

Prints one CSV line per capacity, header first (``--capacity-tokens`` takes one or more; by
default eight, log-spaced from half a mean prompt to the whole trace), or one line per
request with ``--per-request``, or everything as JSON with ``--json`` (with the
unlimited-capacity hit rate beside the Mooncake paper's cache ratio when the file is one
of its traces). ``--timed`` replays with time instead, at the first capacity, one CSV line
per engine step. A bad file or argument: one line on stderr and exit status 2.

``--engine sglang`` replays on SGLang's model instead (engine/lab/trace_replay_sglang.py,
page size 1 unless ``--block-size`` is given), ``--engine both`` on both at the same
capacities: a CSV line per capacity per engine, ``engine`` first, or JSON
``{"vllm": ..., "sglang": ...}``. ``--timed`` is vLLM's only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from engine.lab.paper_gap import paper_gap
from engine.lab.request_trace import TRACE_BLOCK_TOKENS, TraceEntry, TraceError, read_trace
from engine.lab.trace_replay import (
    DEFAULT_STEP_MS,
    PAPER_CACHE_RATIO,
    POINT_COLUMNS,
    REQUEST_COLUMNS,
    HashedTrace,
    InOrderReplay,
    capacities_for,
    paper_comparison,
    replay_in_order,
    replay_with_time,
    slice_entries,
    trace_name_of,
)
from engine.lab.trace_replay_sglang import replay_in_order_sglang
from engine.lab.workload_sglang import SGLANG_PAGE_SIZE

ENGINES = ("vllm", "sglang", "both")


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
    parser.add_argument(
        "--engine", choices=ENGINES, default="vllm", help="the engine to replay on (default vllm)"
    )
    parser.add_argument(
        "--block-size",
        type=_positive,
        help=f"vLLM's block size (default {TRACE_BLOCK_TOKENS}) and SGLang's page size "
        f"(default {SGLANG_PAGE_SIZE})",
    )
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


class Replayer:
    """One engine's in-order replays of the sliced trace (vLLM's hashes made once)."""

    def __init__(self, engine: str, entries: list[TraceEntry], block_size: int) -> None:
        self.engine = engine
        self.entries = entries
        self.block_size = block_size
        self.hashed = HashedTrace.of(entries, block_size) if engine == "vllm" else None

    def replay(self, capacity: int, per_request: bool = False) -> InOrderReplay:
        if self.hashed is not None:
            return replay_in_order(self.hashed, capacity, per_request=per_request)
        return replay_in_order_sglang(
            self.entries, capacity, self.block_size, per_request=per_request
        )


def main(argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    try:
        entries = slice_entries(read_trace(args.trace, args.requests), until_ms=args.until_ms)
    except (TraceError, OSError) as error:
        print(f"error: {args.trace}: {error}", file=sys.stderr)
        return 2
    engines = ("vllm", "sglang") if args.engine == "both" else (args.engine,)
    units = {
        "vllm": args.block_size or TRACE_BLOCK_TOKENS,
        "sglang": args.block_size or SGLANG_PAGE_SIZE,
    }
    if args.timed and args.engine != "vllm":
        print("error: --timed replays on vLLM only (--engine vllm)", file=sys.stderr)
        return 2
    for engine in engines:  # said before the prompts are hashed
        too_small = [c for c in args.capacity_tokens or () if c < units[engine]]
        if too_small:
            unit = "block" if engine == "vllm" else "page"
            print(
                f"error: capacity {too_small[0]} holds no {units[engine]}-token {unit}",
                file=sys.stderr,
            )
            return 2
    # Both engines at the same capacities: vLLM's default ones (whole blocks).
    capacities = args.capacity_tokens or capacities_for(entries, units["vllm"])
    if args.timed:
        trace = HashedTrace.of(entries, units["vllm"])
        timed = replay_with_time(trace, capacities[0], args.step_ms, args.max_num_batched_tokens)
        if args.json:
            print(json.dumps(timed.to_dict(), separators=(",", ":")), file=out)
        else:
            print("\n".join(timed.csv_lines()), file=out)
        return 0
    replayers = [Replayer(engine, entries, units[engine]) for engine in engines]
    tagged = len(replayers) > 1  # an engine column, or one JSON object per engine
    points: dict[str, list[InOrderReplay]] = {engine: [] for engine in engines}
    streaming = not args.json and not args.per_request  # each line as its replay ends
    if streaming:
        print(("engine," if tagged else "") + ",".join(POINT_COLUMNS), file=out)
    for capacity in capacities:
        for replayer in replayers:
            point = replayer.replay(capacity, per_request=args.per_request)
            points[replayer.engine].append(point)
            if streaming:
                line = _csv(POINT_COLUMNS, [point.row()])[1]
                print(f"{replayer.engine},{line}" if tagged else line, file=out, flush=True)
    if streaming:
        return 0
    if args.json:
        data = {engine: _json(args.trace, entries, points[engine]) for engine in engines}
        print(json.dumps(data if tagged else data[engines[0]], separators=(",", ":")), file=out)
        return 0
    columns = ("capacity_tokens", *REQUEST_COLUMNS)
    lines = [("engine," if tagged else "") + ",".join(columns)]
    for engine in engines:
        rows = [
            {"capacity_tokens": point.capacity_tokens, **vars(request)}
            for point in points[engine]
            for request in point.per_request
        ]
        lines.extend(f"{engine},{line}" if tagged else line for line in _csv(columns, rows)[1:])
    print("\n".join(lines), file=out)
    return 0


def _json(path: str, entries: list[TraceEntry], points: list[InOrderReplay]) -> dict[str, Any]:
    block_size = points[0].block_size
    whole_trace_capacity = sum(-(-e.input_length // block_size) for e in entries) * block_size
    data: dict[str, Any] = {
        "trace": path,
        "engine": points[0].engine,
        "requests": len(entries),
        "prompt_tokens": sum(e.input_length for e in entries),
        "block_size": block_size,
        "whole_trace_capacity": whole_trace_capacity,
        "points": [point.row() for point in points],
    }
    # The unlimited point: the whole trace's blocks (or pages), nothing evicted.
    whole = [p for p in points if p.capacity_tokens >= whole_trace_capacity and not p.evictions]
    if whole:
        name = trace_name_of(path)
        data["unlimited"] = {
            **paper_comparison(name, whole[0]),
            "gap": paper_gap(entries, whole[0], PAPER_CACHE_RATIO.get(name)).to_dict(),
        }
    if any(point.per_request for point in points):
        data["per_request"] = {
            str(point.capacity_tokens): [vars(r) for r in point.per_request] for point in points
        }
    return data
