"""A trace through a fleet in order (the Mooncake paper's method, as
engine/lab/traces/vllm/replay.py replays it through one engine): one request after another,
each routed, then served by its replica (vLLM's ``VLLMReplay``, or SGLang's
``SGLangReplay``: the single-engine replay's own step), whose KV events then go to a
router that wants them (``event_delay`` requests later).

Nothing runs concurrently in order, so a replica's load is the router's own count: the
requests it routed there among its last ``load_window`` routes (as if each were still
running for that many routes; Dynamo's router and SGLang's count the requests they sent
that have not finished). Without it a prefix-aware router sends every prompt that shares
a first block with an earlier one to the same replica. With time:
engine/lab/fleet/timed.py."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from engine.lab.fleet.knobs import FleetKnobs
from engine.lab.fleet.requests import RouteRequest, sglang_hashes, trace_pieces, vllm_hashes
from engine.lab.fleet.result import FleetRun, ReplicaFigures
from engine.lab.fleet.routers import make_router
from engine.lab.traces.replay import EngineReplay, InOrderReplay, Stop, _no_cyclic_gc, serve_one
from engine.lab.traces.request_trace import TraceEntry, prompt_tuple
from engine.lab.traces.sglang.replay import SGLangReplay
from engine.lab.traces.vllm.replay import HashedTrace, VLLMReplay

SERIES_POINTS = 200  # windows of the series over the trace


class InOrderFleet:
    """The fleet over a trace in order, a few requests at a time (``advance``) so a caller
    can show progress or stop; ``result()`` at any point."""

    def __init__(
        self,
        entries: Sequence[TraceEntry],
        knobs: FleetKnobs,
        hashed: HashedTrace | None = None,
    ) -> None:
        """``hashed``: the trace's vLLM block hashes at ``knobs.unit`` if already made."""
        knobs.check()
        if knobs.capacity_tokens is None:
            raise ValueError("an in-order fleet needs capacity_tokens")
        self.entries = list(entries)
        self.knobs = knobs
        unit = knobs.unit
        self.router = make_router(knobs.router, knobs.replicas, unit, knobs.load_weight)
        events = self.router.uses_events
        self.vllm = knobs.engine == "vllm"
        self.hashed = None
        self.servers: list[EngineReplay]
        if self.vllm:
            self.hashed = hashed if hashed is not None else HashedTrace.of(self.entries, unit)
            assert self.hashed.block_size == unit, "hashes at the replicas' block size"
            self.servers = [
                VLLMReplay(self.hashed, knobs.capacity_tokens, enable_kv_cache_events=events)
                for _ in range(knobs.replicas)
            ]
        else:
            self.servers = [
                SGLangReplay(knobs.capacity_tokens, unit, None, enable_kv_cache_events=events)
                for _ in range(knobs.replicas)
            ]
            # SGLang's tree records one AllBlocksCleared when it is built
            for replica, server in enumerate(self.servers):
                self.router.observe(replica, server.take_events())
        self.position = 0
        self.recent: deque[int] = deque()  # the last load_window routes' replicas
        self.loads = [0] * knobs.replicas
        self.pending: deque[tuple[int, int, list[object]]] = deque()
        self.believed_routes = self.stale_routes = 0
        self.routes: list[int] = []  # the replica each request went to
        self.stale: list[int] = []  # the requests routed stale
        self.skipped: list[int] = []  # the requests their replica could never admit
        self.hits: list[int] = []  # each request's hit tokens on its replica
        self.window = max(1, len(self.entries) // SERIES_POINTS)
        self.series: dict[str, list[Any]] = {
            "x": [],
            "load": [[] for _ in range(knobs.replicas)],
            "hit_rate": [],
            "stale_routes": [],
        }
        self.seconds = 0.0
        self._closed: list[InOrderReplay] | None = None

    @property
    def done(self) -> bool:
        return self.position >= len(self.entries)

    def advance(self, count: int, stop: Stop | None = None) -> None:
        started = time.perf_counter()
        with _no_cyclic_gc():
            for _ in range(count):
                if self.done or (stop is not None and stop()):
                    break
                self._route_and_serve()
        self.seconds += time.perf_counter() - started

    def run(self, stop: Stop | None = None) -> FleetRun:
        while not self.done:
            self.advance(256, stop)
            if stop is not None and stop():
                break
        return self.result()

    def _route_and_serve(self) -> None:
        index = self.position
        entry = self.entries[index]
        unit = self.knobs.unit
        router = self.router
        while self.pending and self.pending[0][0] <= index:
            _, replica, delayed = self.pending.popleft()
            router.observe(replica, delayed)
        if self.vllm:
            assert self.hashed is not None
            hashes = vllm_hashes(self.hashed.block_hashes[index])
        else:
            # derived only if the router asks, and then once: the replica's replay asks
            # for the same prompt next (prompt_tuple keeps the last)
            hashes = sglang_hashes(lambda: prompt_tuple(entry), unit)
        route = RouteRequest(
            index, entry.input_length, entry.timestamp, hashes, trace_pieces(entry)
        )
        choice = router.choose(route, self.loads)
        self._count_load(choice.replica)
        self.routes.append(choice.replica)
        server = self.servers[choice.replica]
        hit, uncapped, _, skipped = serve_one(server, index, entry)
        self.hits.append(hit)
        if skipped:
            self.skipped.append(index)
        if choice.believed_tokens:
            self.believed_routes += 1
            if not skipped and choice.believed_tokens // unit * unit > uncapped:
                self.stale_routes += 1
                self.stale.append(index)
        if router.uses_events:
            events: list[object] = list(server.take_events())
            if self.knobs.event_delay:
                self.pending.append((index + 1 + self.knobs.event_delay, choice.replica, events))
            else:
                router.observe(choice.replica, events)
        self.position += 1
        if self.position % self.window == 0 or self.done:
            self._sample()

    def _count_load(self, replica: int) -> None:
        recent, loads = self.recent, self.loads
        recent.append(replica)
        loads[replica] += 1
        if len(recent) > self.knobs.window:
            loads[recent.popleft()] -= 1

    def _sample(self) -> None:
        series = self.series
        series["x"].append(self.position)
        for replica, load in enumerate(self.loads):
            series["load"][replica].append(load)
        hits = sum(s.result.hits for s in self.servers)
        tokens = sum(s.result.prompt_tokens for s in self.servers)
        series["hit_rate"].append(hits / tokens if tokens else 0.0)
        series["stale_routes"].append(self.stale_routes)

    def replays(self) -> list[InOrderReplay]:
        """Each replica's in-order replay (its pool let go once the run is done)."""
        if self.done and self._closed is None:
            for server in self.servers:
                server.finish()
            self._closed = [server.result for server in self.servers]
        return self._closed or [server.result for server in self.servers]

    def result(self) -> FleetRun:
        knobs = self.knobs
        figures = [
            ReplicaFigures(
                requests=r.requests,
                prompt_tokens=r.prompt_tokens,
                hits=r.hits,
                skipped_requests=r.skipped_requests,
                evicted_tokens=r.evicted_tokens,
            )
            for r in self.replays()
        ]
        return FleetRun(
            engine=knobs.engine,
            mode="in-order",
            router=knobs.router,
            replicas=knobs.replicas,
            capacity_tokens=knobs.capacity_tokens or 0,
            block_size=knobs.unit,
            per_replica=figures,
            believed_routes=self.believed_routes,
            stale_routes=self.stale_routes,
            completed=self.done,
            seconds=self.seconds,
            series=_copied(self.series),
            routes=list(self.routes),
            skipped=list(self.skipped),
        )


def run_fleet_in_order(
    entries: Sequence[TraceEntry],
    knobs: FleetKnobs,
    hashed: HashedTrace | None = None,
    stop: Stop | None = None,
) -> FleetRun:
    """The trace through the fleet in order, to its end or until ``stop`` says True."""
    return InOrderFleet(entries, knobs, hashed).run(stop)


def _copied(series: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The series as it is now (the load's per-replica lists copied too)."""
    return {k: [list(x) for x in v] if k == "load" else list(v) for k, v in series.items()}
