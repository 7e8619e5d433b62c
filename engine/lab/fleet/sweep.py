"""A sweep: fleet runs at many points (routers x replica counts x capacities), in this
process or in a pool of processes (the standard library's ``ProcessPoolExecutor``). A
point is small to send: the source is named (a trace file and its slice, or a workload
preset) and each process reads and hashes it once."""

from __future__ import annotations

import itertools
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache

from engine.lab.fleet.in_order import run_fleet_in_order
from engine.lab.fleet.knobs import FleetKnobs
from engine.lab.fleet.result import FleetRun
from engine.lab.fleet.timed import run_fleet_timed
from engine.lab.traces.replay import slice_entries
from engine.lab.traces.request_trace import TraceEntry, read_trace
from engine.lab.traces.vllm.replay import HashedTrace
from engine.lab.workload.presets import load_preset
from engine.lab.workload.workload import Workload


@dataclass(frozen=True)
class Source:
    """Where the requests come from: a trace file (``requests`` and ``window_ms`` cut
    it; ``timed`` replays it with time, else in order) or a workload preset."""

    trace: str | None = None
    workload: str | None = None
    requests: int | None = None
    window_ms: tuple[int, int] | None = None
    timed: bool = False

    def entries(self) -> list[TraceEntry]:
        assert self.trace is not None
        return _entries(self.trace, self.requests, self.window_ms)

    def preset(self) -> Workload:
        assert self.workload is not None
        return load_preset(self.workload).workload


@lru_cache(maxsize=2)
def _entries(
    path: str, requests: int | None, window_ms: tuple[int, int] | None
) -> list[TraceEntry]:
    limit = None if window_ms else requests
    return slice_entries(read_trace(path, limit), requests, None, window_ms)


@lru_cache(maxsize=2)
def _hashed(source: Source, block_size: int) -> HashedTrace:
    """A process hashes a trace once for all its points."""
    return HashedTrace.of(source.entries(), block_size)


def run_point(source: Source, knobs: FleetKnobs) -> FleetRun:
    """One fleet run."""
    if source.workload is not None:
        return run_fleet_timed(source.preset(), knobs)
    if source.timed:
        return run_fleet_timed(source.entries(), knobs)
    hashed = _hashed(source, knobs.unit) if knobs.engine == "vllm" else None
    return run_fleet_in_order(source.entries(), knobs, hashed)


def sweep_points(
    base: FleetKnobs,
    routers: list[str],
    replicas: list[int],
    capacities: list[int | None],
) -> list[FleetKnobs]:
    """Every point of routers x replica counts x capacities, in that order."""
    return [
        replace(base, router=router, replicas=n, capacity_tokens=capacity)
        for router, n, capacity in itertools.product(routers, replicas, capacities)
    ]


def run_sweep(source: Source, points: list[FleetKnobs], jobs: int = 1) -> list[FleetRun]:
    """The points' runs, in the points' order: here, or in ``jobs`` processes."""
    for knobs in points:
        knobs.check()
    if jobs <= 1 or len(points) <= 1:
        return [run_point(source, knobs) for knobs in points]
    with ProcessPoolExecutor(max_workers=min(jobs, len(points))) as pool:
        return list(pool.map(run_point, [source] * len(points), points))
