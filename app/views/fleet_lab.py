"""The fleet lab (`?lab=fleet`): a shipped trace's first requests over N replicas behind every
router in turn: the hit rate per router, each replica's load, the stale routes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import panel as pn

from app.components.at_once import Checkbox, FloatInput, IntInput, Select
from app.data.fleet_lab import (
    DEFAULT_FLEET_CAPACITY,
    DEFAULT_FLEET_REQUESTS,
    DEFAULT_REPLICAS,
    FLEET_PRESET,
    FleetLabRun,
    fleet_problems,
    replica_links,
)
from app.data.lab import DEFAULT_ENGINE
from app.data.trace_lab import available_traces, load_trace
from app.host.errors import logged
from app.render.lab import (
    ENGINE_NAMES,
    FLEET,
    lab_text,
    render_fleet_intro,
    render_fleet_numbers,
    render_knob_error,
    render_progress,
    render_replica_links,
)
from app.views.fleet_charts import FleetCharts
from app.views.lab_controls import WRAPPING, LabGroup, html_pane, knob_widgets
from engine.lab.fleet.result import FleetRun
from engine.lab.fleet.routers import DEFAULT_LOAD_WEIGHT, ROUTER_NAMES
from engine.lab.traces.request_trace import TRACE_BLOCK_TOKENS, TraceEntry, TraceError

KNOBS = ("requests", "replicas", "capacity", "block_size", "load_weight", "event_delay")


class FleetLabView(LabGroup):
    """The fleet group: a trace's first requests over replicas, every router in turn."""

    group = "fleet"
    cell_prefix = "fleet"

    def __init__(
        self, notices: Sequence[str] = (), engine: str = DEFAULT_ENGINE, **params: Any
    ) -> None:
        super().__init__(FLEET_PRESET, engine, notices, KNOBS, **params)
        shipped = available_traces()
        trace = shipped[0] if shipped else None
        # the router whose replicas the load chart and the playground links show
        routers = partial(Select, options=list(ROUTER_NAMES))
        self.knobs = knob_widgets(
            (
                ("trace", partial(Select, options=shipped), "Trace", trace, 160),
                ("requests", IntInput, "Requests (first N)", DEFAULT_FLEET_REQUESTS, 150),
                ("replicas", IntInput, "Replicas", DEFAULT_REPLICAS, 100),
                ("capacity", IntInput, "Capacity each (tokens)", DEFAULT_FLEET_CAPACITY, 170),
                ("block_size", IntInput, "Block size (tokens)", TRACE_BLOCK_TOKENS, 130),
                ("load_weight", FloatInput, "Load weight (prefix-aware)", DEFAULT_LOAD_WEIGHT, 180),
                ("event_delay", IntInput, "Event delay (requests, or steps)", 0, 200),
                ("load_router", routers, "Replicas of", "prefix-aware", 150),
                ("timed", Checkbox, "With time (25 ms engine steps)", False, None),
            )
        )
        self.charts = FleetCharts(self.engines)
        self.numbers = html_pane()
        self.playground = html_pane()
        self.runs: Mapping[tuple[str, str], FleetRun] = {}
        self._entries: Sequence[TraceEntry] = ()
        self._shown_engines: Sequence[str] = self.engines
        self.knobs["load_router"].param.watch(lambda _: self._redraw(), "value")
        self.roots = self._build()

    def _build(self) -> tuple[pn.Column, ...]:
        controls = self.controls_root(
            render_fleet_intro(),
            self.knob_row("preset", "trace", "engine", *KNOBS, "load_router", "timed"),
            self.buttons_row(),
        )
        charts = pn.FlexBox(*self.charts.panes, **WRAPPING)
        return controls, self.results_root("lab-fleet", charts, self.numbers, self.playground)

    def checked_knobs(self, entries: Sequence[TraceEntry]) -> dict[str, Any] | None:
        knobs = {name: self.knobs[name].value for name in (*KNOBS, "timed")}
        requests = knobs["requests"] if isinstance(knobs["requests"], int) else 0
        found = fleet_problems(knobs, len(entries), entries[: max(0, requests)])
        for name in KNOBS:
            self.show_knob_error(name, found.get(name, ""))
        return None if found else knobs

    async def start(self) -> None:
        """Every router's run over the knobs' slice, with progress, then the charts and table."""
        try:
            entries = list(await load_trace(self.knobs["trace"].value))
        except TraceError as error:
            self.status.object = render_knob_error(str(error))
            return
        knobs = self.checked_knobs(entries)
        if knobs is None:
            return
        engines = self.engines
        run = FleetLabRun(entries[: knobs["requests"]], engines, knobs)

        def progress(share: float) -> str:
            return render_progress(share, "fleet", done=len(run.runs), total=len(run.points))

        self.status.object = progress(0.0)
        show = self.shows_progress(run, progress)
        playing = run.play(lambda share, _: show(share))
        runs = await self.played(run, playing, FLEET["stopped"])
        if runs is None:
            return
        with pn.io.hold():
            self.runs, self._shown_engines, self._entries = runs, engines, run.entries
            self.charts.set_engines(engines)
            self._redraw()
            done = {name: knobs[name] for name in ("requests", "replicas")}
            self.status.object = lab_text("fleet", "done", runs=len(runs), **done)

    @logged
    def _redraw(self) -> None:
        self.charts.show(self.runs, self._shown_engines, self.knobs["load_router"].value)
        self.numbers.object = render_fleet_numbers(self.runs) if self.runs else ""
        self.playground.object = self._replica_links()

    def _replica_links(self) -> str:
        """The shown router's replicas in the playground (vLLM's run if there is one)."""
        router = self.knobs["load_router"].value
        engine = next((e for e in self._shown_engines if (e, router) in self.runs), None)
        if engine is None:
            return ""
        refusal, links = replica_links(self._entries, self.runs[engine, router])
        return render_replica_links(router, ENGINE_NAMES[engine], refusal, links)
