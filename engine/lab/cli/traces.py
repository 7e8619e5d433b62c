"""``python -m engine --trace FILE``: replay a request trace (Mooncake's JSON lines) in order.

Prints one CSV line per capacity, header first (``--capacity-tokens`` takes one or more; by
default eight, log-spaced from half a mean prompt to the whole trace), or one line per
request with ``--per-request``, or everything as JSON with ``--json`` (with the
unlimited-capacity hit rate beside the Mooncake paper's cache ratio when the file is one
of its traces). A bad file or argument: one line on stderr and exit status 2.

``--timed`` replays a slice with time instead (engine/lab/traces/timed.py): the requests
arrive by their timestamps through the scheduler, one engine step every ``--step-ms``, at
one capacity (default the paper's 3M tokens); one CSV line per engine step (the workload
lab's columns, ``time_ms`` first), or ``--summary`` one line per engine, or ``--json``.
What it cannot show is said on stderr (and in the JSON). ``--requests N`` and
``--window-ms A:B`` (arrivals with ``A <= timestamp < B``) cut the slice, for the in-order
replay too.

``--engine sglang`` replays on SGLang's model instead (engine/lab/traces/sglang/replay.py,
page size 1 unless ``--block-size`` is given), ``--engine both`` on both at the same
capacities: a CSV line per capacity per engine, ``engine`` first, or JSON
``{"vllm": ..., "sglang": ...}``; ``--timed`` too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from engine.lab.cli.workload import OneLineParser, print_runs
from engine.lab.play.scenario import DEFAULT_MAX_NUM_BATCHED_TOKENS
from engine.lab.traces.paper_gap import paper_gap
from engine.lab.traces.replay import (
    PAPER_CACHE_RATIO,
    PAPER_LOCAL_CACHE_TOKENS,
    POINT_COLUMNS,
    REQUEST_COLUMNS,
    InOrderReplay,
    capacities_for,
    paper_comparison,
    slice_entries,
    trace_name_of,
)
from engine.lab.traces.request_trace import TRACE_BLOCK_TOKENS, TraceEntry, TraceError, read_trace
from engine.lab.traces.sglang.replay import replay_in_order_sglang
from engine.lab.traces.timed import (
    CANNOT_SHOW,
    DEFAULT_STEP_MS,
    TIMED_ENGINES,
    TimedKnobs,
    run_trace_timed,
)
from engine.lab.traces.vllm.replay import HashedTrace, replay_in_order
from engine.lab.workload.sglang.runner import SGLANG_PAGE_SIZE

ENGINES = ("vllm", "sglang", "both")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _window(text: str) -> tuple[int, int]:
    """``A:B`` in ms, ``0 <= A < B``."""
    start, colon, end = text.partition(":")
    try:
        window = (int(start), int(end))
    except ValueError:
        window = None
    if not colon or window is None or not 0 <= window[0] < window[1]:
        raise argparse.ArgumentTypeError(f"must be A:B, whole ms with 0 <= A < B, not {text!r}")
    return window


def _step_ms(text: str) -> float:
    value = float(text)
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number of ms, not {text}")
    return value


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = OneLineParser(
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
    parser.add_argument(
        "--window-ms",
        type=_window,
        metavar="A:B",
        help="replay only requests with A <= timestamp < B (the trace's ms)",
    )
    parser.add_argument("--per-request", action="store_true", help="one line per request")
    parser.add_argument("--json", action="store_true", help="print JSON instead of CSV")
    parser.add_argument(
        "--timed", action="store_true", help="replay with arrival times, a line per engine step"
    )
    parser.add_argument(
        "--summary", action="store_true", help="with --timed: one line per engine, not per step"
    )
    parser.add_argument(
        "--step-ms",
        type=_step_ms,
        default=DEFAULT_STEP_MS,
        help=f"with --timed: ms per engine step (default {DEFAULT_STEP_MS:g})",
    )
    parser.add_argument(
        "--max-num-batched-tokens",
        type=_positive,
        default=DEFAULT_MAX_NUM_BATCHED_TOKENS,
        help=f"with --timed: vLLM's batch budget (default {DEFAULT_MAX_NUM_BATCHED_TOKENS})",
    )
    return parser.parse_args(argv)


def _cell(value: Any) -> str:
    if value is None:  # no figure (SGLang's preemptions): an empty cell, as the series'
        return ""
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
        # Without a window only the first N lines are read (a large trace stays cheap).
        limit = args.requests if args.window_ms is None else None
        entries = slice_entries(
            read_trace(args.trace, limit), args.requests, args.until_ms, args.window_ms
        )
    except (TraceError, OSError) as error:
        print(f"error: {args.trace}: {error}", file=sys.stderr)
        return 2
    engines = ("vllm", "sglang") if args.engine == "both" else (args.engine,)
    units = {
        "vllm": args.block_size or TRACE_BLOCK_TOKENS,
        "sglang": args.block_size or SGLANG_PAGE_SIZE,
    }
    if args.timed:
        return _main_timed(args, entries, engines, units, out)
    if args.summary:
        print("error: --summary goes with --timed", file=sys.stderr)
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


def _main_timed(
    args: argparse.Namespace,
    entries: list[TraceEntry],
    engines: Sequence[str],
    units: dict[str, int],
    out: TextIO,
) -> int:
    """``--timed``: the slice with time on each engine, at one capacity."""
    capacities = args.capacity_tokens or [PAPER_LOCAL_CACHE_TOKENS]
    if args.per_request:
        print(
            "error: --per-request is the in-order replay's (--timed prints a line per step)",
            file=sys.stderr,
        )
        return 2
    if len(capacities) > 1:
        print("error: --timed replays at one capacity (one --capacity-tokens)", file=sys.stderr)
        return 2
    knobs = {
        engine: TimedKnobs(
            capacities[0], engine, units[engine], args.step_ms, args.max_num_batched_tokens
        )
        for engine in engines
    }
    for engine in engines:  # every refusal before any replay
        found = knobs[engine].problems(entries)
        if found:
            print(f"error: {engine}: {next(iter(found.values()))}", file=sys.stderr)
            return 2
    runs = {engine: run_trace_timed(entries, knobs[engine]) for engine in engines}
    print(f"note: {CANNOT_SHOW}", file=sys.stderr)
    if args.summary and not args.json:
        rows = [run.summary() for run in runs.values()]
        columns = list(rows[0])
        print("\n".join(_csv(columns, rows)), file=out)
        return 0
    print_runs(runs, args.json, out)
    return 0


assert set(TIMED_ENGINES) == set(ENGINES) - {"both"}


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
