"""The fleet lab's Bokeh charts: the hit rate per router (a bar per engine), the
stale routes per router, and each replica's load over the run for one router."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import panel as pn
from bokeh.models import ColumnDataSource, FactorRange, Range1d
from bokeh.palettes import Category20
from bokeh.plotting import figure

from app.render.lab import ENGINE_NAMES, TEXTS
from app.views.lab_charts import ENGINE_COLORS, HALF, lab_figure
from engine.lab.fleet.result import FleetRun
from engine.lab.fleet.routers import ROUTER_NAMES

Runs = Mapping[tuple[str, str], FleetRun]
# [title, y axis(, x axis)] of each chart (content/labs.toml)
CHARTS = TEXTS["charts"]
NO_LOAD: dict[str, list[Any]] = {"xs": [], "ys": [], "color": [], "replica": []}


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
    title, y_label = CHARTS[f"fleet_{name}"]
    source = ColumnDataSource({"x": [], "y": [], "color": []}, name=f"fleet-{name}")
    fig = lab_figure(title, y_label, x_range=x_range, **params)
    fig.vbar(x="x", top="y", width=0.8, color="color", source=source, name=f"{name}-bars")
    fig.xaxis.major_label_orientation = 0.9
    return source, fig


class FleetCharts:
    """The three charts; ``show(runs, engines, router)`` draws a run's figures."""

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
        self.load_figure = lab_figure(
            title, y_label, x_range=self.load_x, y_range=self.load_y, x_axis_label=x_label
        )
        self.load_figure.multi_line(
            xs="xs", ys="ys", line_color="color", line_width=2, source=self.load_source
        )
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
            self.load_source.data = dict(NO_LOAD)
            return
        title, y_label, x_label = CHARTS[
            "fleet_timed_load" if run.mode == "timed" else "fleet_load"
        ]
        self.load_figure.title.text = title
        self.load_figure.xaxis.axis_label = x_label
        self.load_figure.yaxis.axis_label = y_label
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
