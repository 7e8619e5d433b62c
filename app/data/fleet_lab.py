"""The fleet lab (`?lab=fleet`), without widgets: its knobs checked, and a run of each router's
fleet over a trace slice (engine/lab/fleet/), a slice at a time."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from app.data.lab import SlicedRun, played_for_a_learner
from app.data.trace_lab import MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, TIMED_CELLS
from app.data.url import playground_href
from engine.lab.fleet.in_order import InOrderFleet
from engine.lab.fleet.knobs import MAX_REPLICAS, FleetKnobs
from engine.lab.fleet.playground import (
    fleet_playground_refusal,
    replica_playground_code,
    replica_requests,
)
from engine.lab.fleet.result import FleetRun
from engine.lab.fleet.routers import ROUTER_NAMES
from engine.lab.fleet.timed import TimedFleet
from engine.lab.play.scenario import ScenarioError
from engine.lab.traces.request_trace import TRACE_BLOCK_TOKENS, TraceEntry
from engine.lab.traces.timed import TimedKnobs
from engine.lab.traces.vllm.replay import HashedTrace

# The default run: small enough for Pyodide (every router, both engines at most).
DEFAULT_FLEET_REQUESTS = 300
DEFAULT_REPLICAS = 4
DEFAULT_FLEET_CAPACITY = 1_000_000
MAX_FLEET_REQUESTS = 2_000
REQUESTS_PER_SLICE = 25
STEPS_PER_SLICE = 40


class FleetLabKnobs(TypedDict):
    """The page's knobs by their cells' names, once ``fleet_problems`` finds none wrong."""

    requests: int
    replicas: int
    capacity: int  # tokens, each replica's
    block_size: int  # vLLM's block, SGLang's page
    load_weight: float
    event_delay: int
    timed: bool  # with time: the trace's timestamps, 25 ms engine steps


def fleet_problems(knobs: Mapping[str, Any], entries: Sequence[TraceEntry]) -> dict[str, str]:
    """A message per knob that cannot be used on the trace's ``entries`` (``knobs``: the cells'
    values, an empty one None; with time, also on the slice of them)."""
    found: dict[str, str] = {}
    most = min(len(entries), MAX_FLEET_REQUESTS)
    if knobs["requests"] is None or not 1 <= knobs["requests"] <= most:
        found["requests"] = f"Requests from 1 to {most:,} (the first N of the trace)"
    if knobs["replicas"] is None or not 1 <= knobs["replicas"] <= MAX_REPLICAS:
        found["replicas"] = f"Replicas from 1 to {MAX_REPLICAS}"
    block_size = knobs["block_size"]
    if block_size is None or not MIN_BLOCK_SIZE <= block_size <= MAX_BLOCK_SIZE:
        found["block_size"] = f"Block size from {MIN_BLOCK_SIZE} to {MAX_BLOCK_SIZE:,} tokens"
        block_size = TRACE_BLOCK_TOKENS
    if knobs["capacity"] is None or knobs["capacity"] < block_size:
        found["capacity"] = f"Capacity: at least one {block_size:,}-token block"
    if knobs["load_weight"] is None or not knobs["load_weight"] >= 0:
        found["load_weight"] = "Load weight: a number, 0 or more"
    if knobs["event_delay"] is None or knobs["event_delay"] < 0:
        found["event_delay"] = "Event delay: 0 or more requests"
    if knobs["timed"] and not found:
        for engine in ("vllm", "sglang"):
            timed = TimedKnobs(knobs["capacity"], engine, knobs["block_size"])
            for knob, message in timed.problems(entries[: knobs["requests"]]).items():
                found.setdefault(TIMED_CELLS.get(knob, "requests"), message)
    return found


def fleet_knobs(knobs: FleetLabKnobs, engine: str, router: str) -> FleetKnobs:
    """The engine's fleet knobs: SGLang's page is vLLM's block here."""
    return FleetKnobs(
        replicas=knobs["replicas"],
        router=router,
        engine=engine,
        capacity_tokens=knobs["capacity"],
        block_size=knobs["block_size"],
        load_weight=float(knobs["load_weight"]),
        event_delay=knobs["event_delay"],
    )


class FleetLabRun(SlicedRun):
    """Every router's fleet on every engine asked for, in turn, over the knobs' slice of the trace's
    ``entries``."""

    def __init__(
        self, entries: Sequence[TraceEntry], engines: Sequence[str], knobs: FleetLabKnobs
    ) -> None:
        self.entries = list(entries[: knobs["requests"]])
        self.engines = list(engines)
        self.knobs = knobs
        self.points = [(engine, router) for engine in self.engines for router in ROUTER_NAMES]
        for engine, router in self.points:
            fleet_knobs(knobs, engine, router).check()
        self.runs: dict[tuple[str, str], FleetRun] = {}
        self._fleet: InOrderFleet | TimedFleet | None = None

    @property
    def progress(self) -> float:
        total = len(self.entries) * len(self.points)
        done = len(self.entries) * len(self.runs)
        fleet = self._fleet
        if isinstance(fleet, InOrderFleet):
            done += fleet.position
        elif fleet is not None:
            done += fleet.arrived
        return min(1.0, done / total) if total else 1.0

    async def play(
        self, on_progress: Callable[[float], None]
    ) -> dict[tuple[str, str], FleetRun] | None:
        """Each (engine, router)'s run, in order; None if stopped first."""
        with played_for_a_learner():
            timed = self.knobs["timed"]
            hashed = None if timed else HashedTrace.of(self.entries, self.knobs["block_size"])
            for engine, router in self.points:
                knobs = fleet_knobs(self.knobs, engine, router)
                fleet: InOrderFleet | TimedFleet
                if timed:
                    fleet = TimedFleet(self.entries, knobs)
                else:
                    fleet = InOrderFleet(self.entries, knobs, hashed if engine == "vllm" else None)
                self._fleet = fleet
                every = STEPS_PER_SLICE if timed else REQUESTS_PER_SLICE
                if not await self._advance(fleet, every, lambda: on_progress(self.progress)):
                    return None
                self.runs[engine, router] = fleet.result()
                self._fleet = None
                on_progress(self.progress)
        return self.runs


def replica_links(
    entries: Sequence[TraceEntry], run: FleetRun
) -> tuple[str | None, list[dict[str, Any]]]:
    """Why no replica opens in the playground, or None and per replica its requests, hits and
    prompt tokens, its ``kind`` (idle, link or refused) and its ``href`` or ``reason``."""
    refusal = fleet_playground_refusal(run)
    if refusal is not None:
        return refusal, []
    links = []
    for replica, figures in enumerate(run.per_replica):
        served = replica_requests(run, replica)
        href, reason = None, ""
        if served:
            try:
                code = replica_playground_code(entries, run, replica)
                href = playground_href(code)
            except ScenarioError as error:
                reason = str(error)
        tokens = sum(entries[i].input_length for i in served)
        kind = "link" if href else "refused" if served else "idle"
        figures_of: dict[str, Any] = dict(replica=replica, requests=len(served), hits=figures.hits)
        links.append(figures_of | dict(prompt_tokens=tokens, kind=kind, href=href, reason=reason))
    return None, links
