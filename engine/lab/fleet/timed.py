"""A fleet with time: a trace slice by its timestamps (as engine/lab/traces/timed.py
replays it through one engine) or a workload preset (as the workload lab plays it), each
replica the same runner the single engine uses (``TimedVLLMRunner``,
``TimedSGLangRunner``, ``WorkloadRunner``, ``SGLangWorkloadRunner``), its arrivals taken
from the fleet's router instead of its own.

Each fleet step: the requests whose time has come are built once, routed one by one (the
router sees each replica's waiting + running after the last step, plus what it has just
sent it), handed to their replicas; every replica runs one engine step (an idle one
too, so the replicas' rows line up); then each replica's KV events go to a router that
wants them (``event_delay`` steps later). When no replica has work the clock jumps to the
next arrival, as the single engine's does.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from engine.lab.fleet.knobs import FleetKnobs
from engine.lab.fleet.requests import (
    RouteRequest,
    sglang_hashes,
    token_pieces,
    trace_pieces,
    vllm_hashes,
)
from engine.lab.fleet.result import FleetRun, ReplicaFigures
from engine.lab.fleet.routers import make_router
from engine.lab.traces.replay import Stop
from engine.lab.traces.request_trace import TraceEntry
from engine.lab.traces.timed import TimedKnobs, TimedSGLangRunner, TimedVLLMRunner
from engine.lab.traces.vllm.replay import HashedTrace
from engine.lab.workload.run import SteppedRun
from engine.lab.workload.sglang.runner import SGLangWorkloadRunner
from engine.lab.workload.vllm.runner import WorkloadRunner
from engine.lab.workload.workload import MAX_STEPS, Workload
from engine.sglang.scheduler import Req
from engine.vllm.request import Request

ReplicaRequest = Request | Req


class _Inbox:
    """A replica's arrivals: what the fleet's router sent it since its last step."""

    inbox: list[Any]

    def _arrive(self) -> None:
        for request in self.inbox:
            self._add_request(request)  # type: ignore[attr-defined]
        self.inbox.clear()


class VLLMTraceReplica(_Inbox, TimedVLLMRunner):
    pass


class SGLangTraceReplica(_Inbox, TimedSGLangRunner):
    pass


class VLLMWorkloadReplica(_Inbox, WorkloadRunner):
    pass


class SGLangWorkloadReplica(_Inbox, SGLangWorkloadRunner):
    pass


Replica = VLLMTraceReplica | SGLangTraceReplica | VLLMWorkloadReplica | SGLangWorkloadReplica


class TimedFleet:
    """The fleet with time, a few steps at a time (``advance``); ``result()`` at any
    point. ``source``: a trace slice (``TraceEntry``s) or a ``Workload``."""

    def __init__(self, source: Sequence[TraceEntry] | Workload, knobs: FleetKnobs) -> None:
        knobs.check()
        self.knobs = knobs
        self.vllm = knobs.engine == "vllm"
        # vLLM's block size or SGLang's page size: a workload's own block size on vLLM
        self.unit = unit = _unit(source, knobs)
        self.router = make_router(knobs.router, knobs.replicas, unit, knobs.load_weight)
        events = self.router.uses_events
        self.replicas: list[Replica] = []
        self.entries: list[TraceEntry] | None = None
        if isinstance(source, Workload):
            workload = source
            if self.vllm:
                workload = workload.replace(block_size=unit)
                if knobs.capacity_tokens is not None:
                    workload = workload.replace(num_gpu_blocks=knobs.capacity_tokens // unit)
            self.workload = workload
            # SGLang's pool: the capacity's slots, else the tokens vLLM's pool holds
            self.slots = knobs.capacity_tokens or workload.num_gpu_blocks * workload.block_size
            for _ in range(knobs.replicas):
                if self.vllm:
                    self.replicas.append(VLLMWorkloadReplica(workload, events))
                else:
                    self.replicas.append(SGLangWorkloadReplica(workload, self.slots, unit, events))
            self.total = workload.requests
            self.left_out = 0
        else:
            timed = TimedKnobs(
                knobs.capacity_tokens or 0,
                knobs.engine,
                knobs.block_size,
                knobs.step_ms,
            )
            first: VLLMTraceReplica | SGLangTraceReplica
            if self.vllm:
                first = VLLMTraceReplica(source, timed, events)
                hashed: HashedTrace | None = first.hashed
                self.replicas = [first]
                self.replicas += [
                    VLLMTraceReplica(source, timed, events, hashed)
                    for _ in range(knobs.replicas - 1)
                ]
            else:
                first = SGLangTraceReplica(source, timed, events)
                self.replicas = [first]
                self.replicas += [
                    SGLangTraceReplica(source, timed, events) for _ in range(knobs.replicas - 1)
                ]
            self.workload = first.workload
            self.entries = first.trace.entries
            self.total = len(self.entries)
            self.left_out = len(first.trace.skipped)
        for replica in self.replicas:
            replica.inbox = []
        if events:  # SGLang's tree records one AllBlocksCleared when it is built
            for index, replica in enumerate(self.replicas):
                self.router.observe(index, self._events(replica))
        self.arrived = 0
        self.pending: deque[tuple[int, int, list[object]]] = deque()
        self.beliefs: dict[int, tuple[int, int, ReplicaRequest]] = {}  # index -> replica, tokens
        self.believed_routes = self.stale_routes = 0
        self.routes: list[int] = []
        self.series: dict[str, Any] = {
            "x": [],
            "load": [[] for _ in range(knobs.replicas)],
            "hit_rate": [],
            "stale_routes": [],
        }
        self.seconds = 0.0

    @property
    def step(self) -> int:
        return self.replicas[0].step

    def _busy(self) -> bool:
        return any(r._has_unfinished_requests() for r in self.replicas)

    @property
    def done(self) -> bool:
        return (self.arrived >= self.total and not self._busy()) or self.step >= MAX_STEPS

    def advance(self, steps: int, stop: Stop | None = None) -> None:
        started = time.perf_counter()
        for _ in range(steps):
            if self.done or (stop is not None and stop()):
                break
            self._one_step()
        self.seconds += time.perf_counter() - started

    def run(self, stop: Stop | None = None) -> FleetRun:
        while not self.done:
            self.advance(20, stop)
            if stop is not None and stop():
                break
        return self.result()

    def _due(self) -> range:
        first = self.replicas[0]
        if isinstance(first, VLLMTraceReplica | SGLangTraceReplica):
            return first.trace.due(self.arrived, not self._busy())
        count = self.workload.arrival or self.total
        return range(self.arrived, min(self.total, self.arrived + count))

    def _one_step(self) -> None:
        step = self.step + 1
        while self.pending and self.pending[0][0] <= step:
            _, replica_index, delayed = self.pending.popleft()
            self.router.observe(replica_index, delayed)
        loads = [self._load(r) for r in self.replicas]
        now_ms = self._now_ms(step)
        first = self.replicas[0]
        for index in self._due():
            request = first._make_request(index)
            choice = self.router.choose(self._route(index, request, now_ms), loads)
            loads[choice.replica] += 1
            self.routes.append(choice.replica)
            self.replicas[choice.replica].inbox.append(request)
            if choice.believed_tokens:
                self.believed_routes += 1
                self.beliefs[index] = (choice.replica, choice.believed_tokens, request)
            self.arrived = index + 1
        for replica in self.replicas:
            replica._run_one_step()
        if self.router.uses_events:
            for replica_index, replica in enumerate(self.replicas):
                events = self._events(replica)
                if self.knobs.event_delay:
                    self.pending.append((step + 1 + self.knobs.event_delay, replica_index, events))
                else:
                    self.router.observe(replica_index, events)
        self._settle_beliefs()
        self._sample(now_ms)

    def _capacity(self) -> int:
        """Each replica's pool in tokens."""
        if self.entries is not None:
            return self.knobs.capacity_tokens or 0
        if self.vllm:
            return self.workload.num_gpu_blocks * self.workload.block_size
        return self.slots

    def _now_ms(self, step: int) -> float:
        first = self.replicas[0]
        if isinstance(first, VLLMTraceReplica | SGLangTraceReplica):
            times = first.trace.clock.step_times_ms
            # the clock records the step's time when the fleet asks for its arrivals
            return times[-1] if times else 0.0
        return (step - 1) * self.knobs.step_ms

    @staticmethod
    def _events(replica: Replica) -> list[object]:
        if isinstance(replica, VLLMTraceReplica | VLLMWorkloadReplica):
            return list(replica.scheduler.kv_cache_manager.take_events())
        return list(replica.tree_cache.take_events())

    @staticmethod
    def _load(replica: Replica) -> int:
        scheduler = replica.scheduler
        if isinstance(replica, VLLMTraceReplica | VLLMWorkloadReplica):
            return len(replica.scheduler.waiting) + len(replica.scheduler.running)
        return len(scheduler.waiting_queue) + len(scheduler.running)  # type: ignore[union-attr]

    def _route(self, index: int, request: ReplicaRequest, now_ms: float) -> RouteRequest:
        unit = self.unit
        if isinstance(request, Request):
            hashes = vllm_hashes(request.block_hashes)
            tokens = request.prompt_token_ids
        else:
            tokens = request.origin_input_ids
            hashes = sglang_hashes(lambda: tokens, unit)
        entries = self.entries
        pieces = trace_pieces(entries[index]) if entries else token_pieces(lambda: tokens)
        return RouteRequest(index, len(tokens), now_ms, hashes, pieces)

    def _settle_beliefs(self) -> None:
        """A belief is checked once its request is admitted (its hit is known)."""
        unit = self.unit
        for index, (replica_index, believed, request) in list(self.beliefs.items()):
            hit = self._admitted_hit(self.replicas[replica_index], request)
            if hit is None:
                continue
            del self.beliefs[index]
            prompt = len(
                request.prompt_token_ids
                if isinstance(request, Request)
                else request.origin_input_ids
            )
            could = min(believed // unit * unit, (prompt - 1) // unit * unit)
            if could > hit:
                self.stale_routes += 1

    @staticmethod
    def _admitted_hit(replica: Replica, request: ReplicaRequest) -> int | None:
        if isinstance(request, Request):
            return request.num_cached_tokens if request.num_cached_tokens >= 0 else None
        assert isinstance(replica, SGLangTraceReplica | SGLangWorkloadReplica)
        return replica.request_hits.get(request.rid)

    def _sample(self, now_ms: float) -> None:
        series = self.series
        series["x"].append(now_ms)
        for index, replica in enumerate(self.replicas):
            series["load"][index].append(self._load(replica))
        queries = sum(r.series["cumulative_queries"][-1] for r in self.replicas)
        hits = sum(r.series["cumulative_hits"][-1] for r in self.replicas)
        series["hit_rate"].append(hits / queries if queries else 0.0)
        series["stale_routes"].append(self.stale_routes)

    def replica_runs(self) -> list[SteppedRun[Any]]:
        return list(self.replicas)

    def result(self) -> FleetRun:
        knobs = self.knobs
        figures = []
        for replica in self.replicas:
            series = replica.series
            evictions = sum(series["evictions"])
            if self.vllm:
                evictions *= replica.workload.block_size
            figures.append(
                ReplicaFigures(
                    requests=len(replica.requests),
                    prompt_tokens=series["cumulative_queries"][-1] if series["step"] else 0,
                    hits=series["cumulative_hits"][-1] if series["step"] else 0,
                    skipped_requests=0,
                    evicted_tokens=evictions,
                )
            )
        return FleetRun(
            engine=knobs.engine,
            mode="timed",
            router=knobs.router,
            replicas=knobs.replicas,
            capacity_tokens=self._capacity(),
            block_size=self.unit,
            per_replica=figures,
            believed_routes=self.believed_routes,
            stale_routes=self.stale_routes,
            left_out=self.left_out,
            completed=self.done and self.step < MAX_STEPS,
            seconds=self.seconds,
            series={
                k: [list(x) for x in v] if k == "load" else list(v) for k, v in self.series.items()
            },
            routes=list(self.routes),
        )


def _unit(source: Sequence[TraceEntry] | Workload, knobs: FleetKnobs) -> int:
    """The replicas' block size (vLLM) or page size (SGLang): asked, else a workload's own
    block size on vLLM, else the engine's default (``FleetKnobs.unit``)."""
    if isinstance(source, Workload) and knobs.engine == "vllm":
        return knobs.block_size or source.block_size
    return knobs.unit


def _prompt_tokens(request: ReplicaRequest) -> int:
    if isinstance(request, Request):
        return request.num_prompt_tokens
    return len(request.origin_input_ids)


def run_fleet_timed(
    source: Sequence[TraceEntry] | Workload, knobs: FleetKnobs, stop: Stop | None = None
) -> FleetRun:
    """The fleet with time to its end, or until ``stop`` says True."""
    return TimedFleet(source, knobs).run(stop)
