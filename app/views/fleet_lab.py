"""The fleet lab (`?lab=fleet`): a shipped trace's first requests over N replicas behind every
router in turn: the hit rate per router, each replica's load, the stale routes (Bokeh charts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, cast

import panel as pn
from bokeh.models import ColumnDataSource, FactorRange, Range1d
from bokeh.models.annotations import Legend, LegendItem
from bokeh.models.renderers import GlyphRenderer
from bokeh.palettes import Category20
from bokeh.plotting import figure

from app.components.at_once import Checkbox, FloatInput, IntInput, Select
from app.data.fleet_lab import (
    DEFAULT_FLEET_CAPACITY,
    DEFAULT_FLEET_REQUESTS,
    DEFAULT_REPLICAS,
    FleetLabKnobs,
    FleetLabRun,
    fleet_problems,
    replica_links,
)
from app.data.lab import DEFAULT_ENGINE
from app.data.lab_presets import FLEET_PRESET
from app.data.trace_lab import available_traces, load_trace
from app.host.errors import logged
from app.render.lab import (
    ENGINE_NAMES,
    FLEET,
    TEXTS,
    lab_text,
    render_fleet_intro,
    render_fleet_numbers,
    render_knob_error,
    render_progress,
    render_replica_links,
)
from app.views.lab_charts import (
    CHART_HEIGHT,
    ENGINE_COLORS,
    HALF,
    lab_figure,
    title_html,
    title_pane,
)
from app.views.lab_controls import WRAPPING, LabGroup, html_pane, knob_widgets
from engine.lab.fleet.result import FleetRun
from engine.lab.fleet.routers import DEFAULT_LOAD_WEIGHT, ROUTER_NAMES
from engine.lab.traces.request_trace import TRACE_BLOCK_TOKENS, TraceEntry, TraceError

Runs = Mapping[tuple[str, str], FleetRun]
# [title, y axis(, x axis)] of each chart (content/labs.toml)
CHARTS = TEXTS["charts"]
KNOBS = ("requests", "replicas", "capacity", "block_size", "load_weight", "event_delay")
NO_LOAD: dict[str, list[Any]] = {"xs": [], "ys": [], "color": [], "replica": []}
# The load chart's legend, under it: a row of replicas' names per LEGEND_COLUMNS replicas
# (four fit a phone), each row LEGEND_ROW px more chart.
LEGEND_COLUMNS = 4
LEGEND_ROW = 18


def _factors(engines: Sequence[str]) -> list[tuple[str, str]]:
    return [(router, ENGINE_NAMES[engine]) for router in ROUTER_NAMES for engine in engines]


def _bars(runs: Runs, engines: Sequence[str], value: str) -> dict[str, list[Any]]:
    """A bar per router and engine with a run: its ``value``, in the engine's colour."""
    shown = [(r, e) for r in ROUTER_NAMES for e in engines if (e, r) in runs]
    return {
        "x": [(router, ENGINE_NAMES[engine]) for router, engine in shown],
        "y": [float(getattr(runs[engine, router], value)) for router, engine in shown],
        "color": [ENGINE_COLORS[engine] for _, engine in shown],
    }


def bar_chart(name: str, x_range: FactorRange, **params: Any) -> tuple[ColumnDataSource, figure]:
    """A bar per router and engine, in the engine's colour, from the source ``fleet-{name}``."""
    _, y_label = CHARTS[f"fleet_{name}"]
    source = ColumnDataSource({"x": [], "y": [], "color": []}, name=f"fleet-{name}")
    fig = lab_figure(y_label, x_range=x_range, **params)
    fig.vbar(x="x", top="y", width=0.8, color="color", source=source, name=f"{name}-bars")
    fig.xaxis.major_label_orientation = 0.9
    return source, fig


class FleetCharts:
    """The fleet's three Bokeh charts: the hit rate per router (a bar per engine), the stale routes
    per router, and each replica's load over the run for one router."""

    def __init__(self, engines: Sequence[str]) -> None:
        self.ranges = [FactorRange(factors=_factors(engines), range_padding=0.1) for _ in range(2)]
        self.hit_source, self.hit_figure = bar_chart("hits", self.ranges[0], rate=True)
        self.stale_range = Range1d(start=0, end=1)
        self.stale_source, self.stale_figure = bar_chart(
            "stale", self.ranges[1], y_range=self.stale_range
        )
        self.load_source = ColumnDataSource(dict(NO_LOAD), name="fleet-load")
        self.load_x, self.load_y = Range1d(start=0, end=1), Range1d(start=0, end=1)
        title, y_label, x_label = CHARTS["fleet_load"]
        self.load_title = title_pane(title)
        self.load_figure = lab_figure(
            y_label, x_range=self.load_x, y_range=self.load_y, x_axis_label=x_label
        )
        lines: GlyphRenderer[Any] = self.load_figure.multi_line(
            xs="xs", ys="ys", line_color="color", line_width=2, source=self.load_source
        )
        # Hidden while there are no replicas to name (an empty box otherwise).
        self.load_legend = Legend(
            visible=False,
            items=[LegendItem(label={"field": "replica"}, renderers=[lines])],
            orientation="horizontal",
            ncols=LEGEND_COLUMNS,
            label_text_font_size="11px",
            label_height=12,
            glyph_height=12,
            spacing=4,
            margin=4,
        )
        self.load_figure.add_layout(self.load_legend, "below")
        hits, stale = (title_pane(CHARTS[f"fleet_{name}"][0]) for name in ("hits", "stale"))
        charts = (
            (hits, self.hit_figure),
            (self.load_title, self.load_figure),
            (stale, self.stale_figure),
        )
        # Each chart under its title, half a row wide.
        self.cells = [
            pn.Column(
                heading,
                pn.pane.Bokeh(fig, sizing_mode="stretch_width"),
                sizing_mode="stretch_width",
                styles=HALF,
            )
            for heading, fig in charts
        ]

    def show(self, runs: Runs, engines: Sequence[str], run: FleetRun | None) -> None:
        """The runs' bars on ``engines``, and ``run``'s replicas' load."""
        for factor_range in self.ranges:
            factor_range.factors = _factors(engines)
        self.hit_source.data = _bars(runs, engines, "hit_rate")
        stale = _bars(runs, engines, "stale_routes")
        self.stale_source.data = stale
        self.stale_range.end = max([1.0, *stale["y"]]) * 1.1
        self.load_legend.visible = run is not None
        if run is None:
            self.load_source.data = dict(NO_LOAD)
            return
        title, y_label, x_label = CHARTS[
            "fleet_timed_load" if run.mode == "timed" else "fleet_load"
        ]
        self.load_title.object = title_html(title)
        self.load_figure.xaxis.axis_label = x_label
        self.load_figure.yaxis.axis_label = y_label
        loads = run.series["load"]
        self.load_x.end = max([1, *run.series["x"]])
        self.load_y.end = max([1, *(max(load, default=0) for load in loads)]) + 1
        palette = Category20[20]
        rows = -(-len(loads) // LEGEND_COLUMNS)
        self.load_figure.height = CHART_HEIGHT + rows * LEGEND_ROW
        self.load_source.data = {
            "xs": [run.series["x"]] * len(loads),
            "ys": loads,
            "color": [palette[i % 20] for i in range(len(loads))],
            "replica": [f"Replica {i}" for i in range(len(loads))],
        }


class FleetLabView(LabGroup):
    """The fleet group: a trace's first requests over replicas, every router in turn."""

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
        charts = pn.FlexBox(*self.charts.cells, **WRAPPING)
        return controls, self.results_root("lab-fleet", charts, self.numbers, self.playground)

    def checked_knobs(self, entries: Sequence[TraceEntry]) -> FleetLabKnobs | None:
        knobs = {name: self.knobs[name].value for name in (*KNOBS, "timed")}
        found = fleet_problems(knobs, entries)
        for name in KNOBS:
            self.show_knob_error(name, found.get(name, ""))
        return None if found else cast(FleetLabKnobs, knobs)

    async def start(self) -> None:
        """Every router's run over the knobs' slice, with progress, then the charts and table."""
        try:
            entries = await load_trace(self.knobs["trace"].value)
        except TraceError as error:
            self.status.object = render_knob_error(str(error))
            return
        knobs = self.checked_knobs(entries)
        if knobs is None:
            return
        engines = self.engines
        run = FleetLabRun(entries, engines, knobs)

        def progress(share: float) -> str:
            return render_progress(share, "fleet", done=len(run.runs), total=len(run.points))

        def show(runs: dict[tuple[str, str], FleetRun]) -> None:
            self.runs, self._shown_engines, self._entries = runs, engines, run.entries
            self._redraw()
            done = dict(requests=knobs["requests"], replicas=knobs["replicas"])
            self.status.object = lab_text("fleet", "done", runs=len(runs), **done)

        self.status.object = progress(0.0)
        await self.play_run(run, run.play, progress, FLEET["stopped"], show)

    @logged
    def _redraw(self) -> None:
        """The runs, and the shown router's replicas (vLLM's run if there is one): their load and
        their requests in the playground."""
        router = self.knobs["load_router"].value
        shown = (self.runs.get((engine, router)) for engine in self._shown_engines)
        run = next((run for run in shown if run is not None), None)
        self.charts.show(self.runs, self._shown_engines, run)
        self.numbers.object = render_fleet_numbers(self.runs) if self.runs else ""
        self.playground.object = (
            "" if run is None else render_replica_links(run, *replica_links(self._entries, run))
        )
