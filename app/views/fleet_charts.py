"""The fleet lab's Bokeh charts: the hit rate per router (a bar per engine), the
stale routes per router, and each replica's load over the run for one router."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import panel as pn
from bokeh.models import ColumnDataSource, FactorRange, NumeralTickFormatter, Range1d
from bokeh.palettes import Category20
from bokeh.plotting import figure

from app.render.lab_traces import ENGINE_NAMES
from app.views.lab_charts import CHART_HEIGHT, ENGINE_COLORS, FIGURE, rate_range
from engine.lab.fleet.result import FleetRun
from engine.lab.fleet.routers import ROUTER_NAMES

Runs = Mapping[tuple[str, str], FleetRun]
HALF = {"flex": "1 1 520px"}
LOAD_TITLE = "Each replica's load as the router sees it"


def _factors(engines: Sequence[str]) -> list[tuple[str, str]]:
    return [(router, ENGINE_NAMES[engine]) for router in ROUTER_NAMES for engine in engines]


def _bars(runs: Runs, engines: Sequence[str], value: str) -> dict[str, list[Any]]:
    x: list[Any] = []
    y: list[Any] = []
    color: list[Any] = []
    for router in ROUTER_NAMES:
        for engine in engines:
            run = runs.get((engine, router))
            if run is None:
                continue
            x.append((router, ENGINE_NAMES[engine]))
            y.append(float(getattr(run, value)))
            color.append(ENGINE_COLORS[engine])
    return {"x": x, "y": y, "color": color}


class FleetCharts:
    """The three charts; ``show(runs, engines, router)`` draws a run's figures."""

    def __init__(self, engines: Sequence[str]) -> None:
        self.hit_source = ColumnDataSource({"x": [], "y": [], "color": []}, name="fleet-hits")
        self.stale_source = ColumnDataSource({"x": [], "y": [], "color": []}, name="fleet-stale")
        self.load_source = ColumnDataSource(
            {"xs": [], "ys": [], "color": [], "replica": []}, name="fleet-load"
        )
        self.ranges = [FactorRange(factors=_factors(engines), range_padding=0.1) for _ in range(2)]
        self.hit_figure = figure(
            title="Prefix cache hit rate of the fleet, per router",
            x_range=self.ranges[0],
            y_range=rate_range(),
            height=CHART_HEIGHT,
            y_axis_label="hit rate",
            **FIGURE,
        )
        self.hit_figure.vbar(
            x="x", top="y", width=0.8, color="color", source=self.hit_source, name="hit-bars"
        )
        self.hit_figure.yaxis.formatter = NumeralTickFormatter(format="0%")
        self.stale_range = Range1d(start=0, end=1)
        self.stale_figure = figure(
            title="Stale routes per router",
            x_range=self.ranges[1],
            y_range=self.stale_range,
            height=CHART_HEIGHT,
            y_axis_label="routes",
            **FIGURE,
        )
        self.stale_figure.vbar(
            x="x", top="y", width=0.8, color="color", source=self.stale_source, name="stale-bars"
        )
        self.load_x, self.load_y = Range1d(start=0, end=1), Range1d(start=0, end=1)
        self.load_figure = figure(
            title=LOAD_TITLE,
            x_range=self.load_x,
            y_range=self.load_y,
            height=CHART_HEIGHT,
            x_axis_label="requests routed",
            y_axis_label="requests (of the last routes)",
            **FIGURE,
        )
        self.load_figure.multi_line(
            xs="xs", ys="ys", line_color="color", line_width=2, source=self.load_source
        )
        for fig in (self.hit_figure, self.stale_figure):
            fig.xaxis.major_label_orientation = 0.9
        self.panes = [
            pn.pane.Bokeh(fig, sizing_mode="stretch_width", styles=HALF)
            for fig in (self.hit_figure, self.load_figure, self.stale_figure)
        ]

    def set_engines(self, engines: Sequence[str]) -> None:
        for factor_range in self.ranges:
            factor_range.factors = _factors(engines)

    def show(self, runs: Runs, engines: Sequence[str], load_router: str) -> None:
        self.hit_source.data = _bars(runs, engines, "hit_rate")
        stale = _bars(runs, engines, "stale_routes")
        self.stale_source.data = stale
        self.stale_range.end = max([1.0, *stale["y"]]) * 1.1
        run = next((runs[e, load_router] for e in engines if (e, load_router) in runs), None)
        if run is None:
            self.load_source.data = {"xs": [], "ys": [], "color": [], "replica": []}
            return
        timed = run.mode == "timed"
        self.load_figure.title.text = (
            "Each replica's requests waiting + running" if timed else LOAD_TITLE
        )
        self.load_figure.xaxis.axis_label = "time (ms)" if timed else "requests routed"
        self.load_figure.yaxis.axis_label = "requests" if timed else "requests (of the last routes)"
        loads = run.series["load"]
        self.load_x.end = max([1, *run.series["x"]])
        self.load_y.end = max([1, *(max(load, default=0) for load in loads)]) + 1
        palette = Category20[20]
        self.load_source.data = {
            "xs": [run.series["x"]] * len(loads),
            "ys": loads,
            "color": [palette[i % 20] for i in range(len(loads))],
            "replica": [f"replica {i}" for i in range(len(loads))],
        }
