"""The workload lab's "Real traces" group, without widgets: the shipped traces, the knobs' checks, a
trace's hit-rate curve against capacity played point by point and the slice replayed with time,
played for a learner as the presets' runs (app/data/lab.py)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app.data.lab import ChartData, SlicedRun, played_for_a_learner
from app.host.runtime import in_pyodide
from engine.lab.traces.paper_gap import PaperGap, paper_gap
from engine.lab.traces.replay import (
    PAPER_CACHE_RATIO,
    PAPER_LOCAL_CACHE_TOKENS,
    InOrderReplay,
    capacities_for,
)
from engine.lab.traces.request_trace import (
    TRACE_BLOCK_TOKENS,
    TraceEntry,
    TraceError,
    parse_trace_bytes,
    read_trace,
)
from engine.lab.traces.sglang.replay import replay_in_order_sglang
from engine.lab.traces.timed import (
    TimedKnobs,
    TimedRunner,
    TimedTraceRun,
    timed_result,
    timed_runner,
)
from engine.lab.traces.vllm.replay import HashedTrace, replay_in_order
from engine.lab.workload.run import PROGRESS_EVERY_STEPS

# The traces shipped with the lab, by the paper's names, and where they are looked for:
# the repository's content/traces (gzipped, with their licence).
SHIPPED_TRACES = ("conversation", "synthetic")
TRACES_DIR = Path(__file__).resolve().parents[2] / "content" / "traces"
# The slice the lab starts with: a curve of it takes about a second in CPython.
DEFAULT_TRACE_REQUESTS = 300
# Smaller blocks than the trace's 512 hash many more blocks: only on a slice this small.
SMALL_BLOCKS_MAX_REQUESTS = 2_000
MIN_BLOCK_SIZE, MAX_BLOCK_SIZE = 16, 4_096


def check_trace_knobs(requests: Any, block_size: Any, available: int) -> dict[str, str]:
    """A message per trace knob that is wrong; ``available``: the trace's requests."""
    found: dict[str, str] = {}
    if requests is None or requests < 0:
        found["requests"] = "Requests: 0 (the whole trace) or more"
    if block_size is None or not MIN_BLOCK_SIZE <= block_size <= MAX_BLOCK_SIZE:
        found["block_size"] = f"block_size from {MIN_BLOCK_SIZE} to {MAX_BLOCK_SIZE:,} tokens"
    elif requests is not None and requests >= 0 and block_size < TRACE_BLOCK_TOKENS:
        size = requests or available
        if size > SMALL_BLOCKS_MAX_REQUESTS:
            found["block_size"] = (
                f"block_size below {TRACE_BLOCK_TOKENS} needs a slice of at most "
                f"{SMALL_BLOCKS_MAX_REQUESTS:,} requests"
            )
    return found


def trace_path(name: str) -> Path | None:
    """The shipped trace's file (gzipped or not), or None when it is not there."""
    for suffix in (".jsonl.gz", ".jsonl"):
        path = TRACES_DIR / f"{name}_trace{suffix}"
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=2)
def shipped_trace(name: str) -> tuple[TraceEntry, ...]:
    """A shipped trace's requests (read once). Raises TraceError if it is not there."""
    path = trace_path(name)
    if path is None:
        raise TraceError(0, None, f"the {name} trace is not shipped with this lab")
    return tuple(read_trace(path))


# On the static site (Pyodide), the traces are fetched from the site's own folder
# (app/static_site/traces.py ships them there, gzipped).
SITE_TRACES_URL = "traces/{name}_trace.jsonl.gz"
_fetched_traces: dict[str, tuple[TraceEntry, ...]] = {}


def available_traces() -> list[str]:
    """The shipped traces this lab can replay (on the site: all, fetched when asked)."""
    if in_pyodide():
        return list(SHIPPED_TRACES)
    return [name for name in SHIPPED_TRACES if trace_path(name) is not None]


async def load_trace(name: str) -> tuple[TraceEntry, ...]:
    """A shipped trace's requests: read on a server, fetched once in Pyodide; TraceError if none."""
    if not in_pyodide():
        return shipped_trace(name)
    if name not in _fetched_traces:
        from pyodide.http import pyfetch

        response = await pyfetch(SITE_TRACES_URL.format(name=name))
        if not response.ok:
            raise TraceError(0, None, f"the {name} trace is not shipped with this site")
        _fetched_traces[name] = tuple(parse_trace_bytes(await response.bytes()))
    return _fetched_traces[name]


def curve_columns(points: Sequence[InOrderReplay]) -> ChartData:
    """A curve's points as a chart's columns (capacity in tokens, hit rate)."""
    return {
        "capacity": [float(p.capacity_tokens) for p in points],
        "hit_rate": [p.hit_rate for p in points],
    }


class TraceCurveRun(SlicedRun):
    """Plays a trace's hit-rate curves, one per engine in turn, a point (capacity) at a time. On a
    server a point plays in a thread, so Stop reaches the replay within a few hundred requests; in
    Pyodide Stop lands between points."""

    def __init__(
        self,
        trace: str,
        entries: Sequence[TraceEntry],
        whole_trace: bool,
        block_size: int = TRACE_BLOCK_TOKENS,
        engines: Sequence[str] = ("vllm",),
    ) -> None:
        self.trace = trace  # the paper's name ("conversation"), or the learner's file's
        self.entries = list(entries)
        self.whole_trace = whole_trace  # only then compared to the paper
        self.block_size = block_size
        self.engines = list(engines)
        self.capacities = capacities_for(self.entries, block_size)
        # engine -> one replay per capacity, in order; the gap at unlimited capacity (whole
        # curves only)
        self.points: dict[str, list[InOrderReplay]] = {engine: [] for engine in self.engines}
        self.gaps: dict[str, PaperGap] = {}

    @property
    def paper_ratio(self) -> float | None:
        return PAPER_CACHE_RATIO.get(self.trace) if self.whole_trace else None

    @property
    def progress(self) -> float:
        done = sum(len(points) for points in self.points.values())
        return done / (len(self.capacities) * len(self.engines))

    async def _call(self, work: Callable[[], Any]) -> Any:
        if in_pyodide():
            return work()
        return await asyncio.to_thread(work)

    async def play(
        self, on_point: Callable[[str, list[InOrderReplay]], None] = lambda *_: None
    ) -> TraceCurveRun | None:
        """Every engine's curve, ``on_point(engine, points)`` as each comes; None if stopped."""
        with played_for_a_learner():
            for engine in self.engines:
                if not await self._play_curve(engine, on_point):
                    return None
        self.gaps = self._gaps()
        return self

    async def _play_curve(
        self, engine: str, on_point: Callable[[str, list[InOrderReplay]], None]
    ) -> bool:
        """Every point of the engine's curve; False if stopped first."""
        if engine == "vllm":
            hashed = await self._call(lambda: HashedTrace.of(self.entries, self.block_size))
            if self.stopped:
                return False
        for capacity in self.capacities:

            def one(capacity: int = capacity) -> InOrderReplay:
                if engine == "vllm":
                    return replay_in_order(hashed, capacity, stop=lambda: self.stopped)
                return replay_in_order_sglang(self.entries, capacity, stop=lambda: self.stopped)

            point = await self._call(one)
            if self.stopped or not point.completed:
                return False
            self.points[engine].append(point)
            on_point(engine, self.points[engine])
            if not await self._between_slices():
                return False
        return True

    def _gaps(self) -> dict[str, PaperGap]:
        """Each engine's gap to the paper's ratio, if its last point holds the whole slice."""
        ratio, gaps = self.paper_ratio, {}
        for engine, points in self.points.items():
            last = points[-1]
            if not (last.evictions or last.skipped_requests):
                gaps[engine] = paper_gap(self.entries, last, ratio)
        return gaps


# -- Real traces with time: the slice through the scheduler (engine/lab/traces/timed.py) ----

# The timed replay's pool when the learner sets none: the paper's one node's local cache
# (the CLI's default too).
DEFAULT_TIMED_CAPACITY = PAPER_LOCAL_CACHE_TOKENS
# The cell (on the traces' and the fleet's pages) of a timed knob the engine names otherwise.
TIMED_CELLS = {"capacity_tokens": "capacity"}


def timed_knobs(engine: str, capacity_tokens: int, block_size: int, step_ms: float) -> TimedKnobs:
    """The timed replay's knobs on ``engine`` (the block size is vLLM's; SGLang keeps its own)."""
    return TimedKnobs(
        capacity_tokens,
        engine=engine,
        block_size=block_size if engine == "vllm" else None,
        step_ms=step_ms,
    )


def timed_problems(
    entries: Sequence[TraceEntry],
    engines: Sequence[str],
    capacity_tokens: int | None,
    block_size: int,
    step_ms: float | None,
) -> dict[str, str]:
    """Every timed knob that cannot be used with this slice on any of ``engines``."""
    found: dict[str, str] = {}
    if step_ms is None:
        found["step_ms"] = "Step time needs a value (ms)"
    if capacity_tokens is None:
        found["capacity_tokens"] = "Capacity needs a value (tokens)"
    if step_ms is None or capacity_tokens is None:
        return found
    for engine in engines:
        knobs = timed_knobs(engine, capacity_tokens, block_size, step_ms)
        for knob, message in knobs.problems(entries).items():
            found.setdefault(knob, message)
    return found


class TraceTimedRun(SlicedRun):
    """Plays a slice with time on each engine in turn, a few engine steps per slice (progress,
    Stop). Raises WorkloadError for a knob ``timed_problems`` refuses."""

    def __init__(
        self,
        entries: Sequence[TraceEntry],
        engines: Sequence[str],
        capacity_tokens: int,
        block_size: int,
        step_ms: float,
    ) -> None:
        self.entries = list(entries)
        self.knobs = [timed_knobs(e, capacity_tokens, block_size, step_ms) for e in engines]
        for knobs in self.knobs:
            knobs.check(self.entries)
        self.runs: list[TimedTraceRun] = []
        self._runner: TimedRunner | None = None

    @property
    def progress(self) -> float:
        """The share of the slice's requests finished, over the engines."""
        total = len(self.entries) * len(self.knobs)
        done = len(self.entries) * len(self.runs)
        if self._runner is not None:
            done += self._runner.num_finished
        return min(1.0, done / total) if total else 1.0

    async def play(
        self, on_progress: Callable[[float], None] = lambda _: None
    ) -> list[TimedTraceRun] | None:
        """Each engine's run, in the order asked for; None if stopped first."""
        with played_for_a_learner():
            for knobs in self.knobs:
                runner = self._runner = timed_runner(self.entries, knobs)
                every = PROGRESS_EVERY_STEPS
                if not await self._advance(runner, every, lambda: on_progress(self.progress)):
                    return None
                self.runs.append(timed_result(runner))
                self._runner = None
                runner.release()
        return self.runs
