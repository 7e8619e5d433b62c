"""The labs' Bokeh charts, built once: a run's data only replaces their sources'. ``RunCharts``:
charts of workload runs per engine step (SOURCE_KEYS' four sources), each with its legend below
it; ``CurveChart``: the traces' hit rate against capacity."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import panel as pn
from bokeh.models import (
    BasicTicker,
    ColumnDataSource,
    DataRange1d,
    NumeralTickFormatter,
    Range1d,
)
from bokeh.models.annotations import Label, Span
from bokeh.plotting import figure

from app.components.chart_legend import ChartLegend
from app.data.lab import chart_data, draws_nothing, means_nothing_on_sglang
from app.data.trace_lab import TraceCurveRun, curve_columns
from app.host.errors import logged
from app.render.lab import ENGINE_NAMES, TEXTS, LegendItem, lab_text, render_chart_legend
from app.views.lab_controls import html_pane, update_changed
from engine.lab.traces.replay import PAPER_LOCAL_CACHE_TOKENS, InOrderReplay
from engine.lab.workload.run import WorkloadRun

# A chart's height (px), less its title above it in HTML (22 px, as a Bokeh title took
# inside it); the hit-rate chart gives its legend's line naming the runs its room.
CHART_HEIGHT = 218
HIT_RATE_CHART_HEIGHT = CHART_HEIGHT - 24
TRACES_CHART_HEIGHT = 298
# What every chart has: its tools, and a canvas rather than WebGL.
FIGURE: dict[str, Any] = {
    "sizing_mode": "stretch_width",
    "tools": "pan,wheel_zoom,box_zoom,reset,save,hover",
    "toolbar_location": "right",
    "output_backend": "canvas",
}

# The sources: (engine, run), the learner's run or the overlay's.
SOURCE_KEYS = (("vllm", "run"), ("vllm", "compare"), ("sglang", "run"), ("sglang", "compare"))
# engine -> its runs' colours ("run", "compare") and the pool chart's, by column
COLORS: dict[str, dict[str, str]] = TEXTS["colors"]
ENGINE_COLORS = {"vllm": COLORS["vllm"]["run"], "sglang": COLORS["vllm"]["compare"]}
# The name of each chart's invisible renderer that gives its ranges a span (make_figure).
RANGE_ANCHOR = "range-anchor"

# Each chart's title, y label, series ([column, legend]), whether its y is a rate from 0 to 1,
# why it draws nothing (said in one line instead of an empty frame) and its title once
# SGLang's runs are on it, if another (content/labs.toml).
CHARTS: list[dict[str, Any]] = TEXTS["chart"]
# Scatter, not lines: a per-step rate has gaps on steps that admitted nobody.
SCATTER_COLUMNS = frozenset({"hit_rate"})
LINE_DASHES = ("solid", "dotted", "dotdash")
# Why a chart of what SGLang does not model draws nothing for it.
NOT_ON_SGLANG: str = TEXTS["lab"]["not_on_sglang"]
# The columns the charts draw: the only ones sent to the browser.
CHART_COLUMNS = tuple(
    dict.fromkeys(["step", *(column for chart in CHARTS for column, _ in chart["series"])])
)
# A chart's share of a row of charts: two side by side on a wide screen.
HALF = {"flex": "1 1 520px"}

# A chart's legend items: (engine, run name, item).
EngineItems = list[tuple[str, str, LegendItem]]


def lab_figure(y_label: str, rate: bool = False, **params: Any) -> figure:
    """A lab chart, ``CHART_HEIGHT`` high unless ``params`` say otherwise; a ``rate`` 0..1, in %.
    Its title is a ``title_pane`` above it."""
    if rate:
        params["y_range"] = Range1d(start=-0.02, end=1.05)  # a little room around 0..1
    fig = figure(y_axis_label=y_label, **{"height": CHART_HEIGHT, **FIGURE, **params})
    if rate:
        fig.yaxis.formatter = NumeralTickFormatter(format="0%")
    return fig


def title_html(title: str) -> str:
    return lab_text("lab", "chart_title", title=title)


def title_pane(title: str, **params: Any) -> pn.pane.HTML:
    """A chart's title, in HTML above it: it wraps on a phone, where a Bokeh title is cut off."""
    return html_pane(title_html(title), margin=(0, 10), **params)


def make_figure(
    chart: dict[str, Any], sources: Sequence[ColumnDataSource], steps: DataRange1d
) -> tuple[figure, EngineItems]:
    """A chart of every run's series, and its legend's items (drawn in HTML by ChartLegend: Bokeh's
    legend cost every repaint a forced layout)."""
    y_label, series, unit_range = (chart[key] for key in ("y_label", "series", "rate"))
    fig = lab_figure(y_label, unit_range, x_range=steps, x_axis_label="engine step")
    if not unit_range:
        # Counts start at 0 even when they stay 0, and are whole numbers: a chart of zeros
        # would otherwise tick at 0.2, 0.4, ... and label each of them "0" or "1".
        fig.y_range = DataRange1d(start=0)
        fig.yaxis.formatter = NumeralTickFormatter(format="0,0")
        fig.yaxis.ticker = BasicTicker(min_interval=1)
    items: EngineItems = []
    for index, (column, legend_text) in enumerate(series):
        for source, (engine, name) in zip(sources, SOURCE_KEYS, strict=True):
            colors = COLORS[engine]
            color = colors.get(column, colors[name])
            scatter = column in SCATTER_COLUMNS
            dash = "solid" if name == "run" else "dashed"
            item = LegendItem(
                key=f"{column}/{'' if engine == 'vllm' else 'sglang-'}{name}",
                label=f"{legend_text} ({dash})",
                color=color,
                dash=dash if index == 0 or column in colors else LINE_DASHES[index],
                marker=("circle" if name == "run" else "triangle") if scatter else None,
                alpha=0.6 if scatter else 1.0 if index == 0 else 0.75,
            )
            items.append((engine, name, item))
            drawn: dict[str, Any] = dict(
                source=source, color=color, alpha=item.alpha, name=item.key
            )
            if item.marker is not None:
                fig.scatter("step", column, size=5, marker=item.marker, **drawn)
            else:
                fig.line("step", column, line_width=2, line_dash=item.dash, **drawn)
    # The sources are empty until the first run ends, and Bokeh cannot range a chart with
    # no data: it warns "could not set initial ranges" in the console at every repaint.
    # An invisible renderer over (0, 0)-(1, 1) gives both axes a span from the start;
    # steps and counts start at 0 anyway, and a count that stays 0 is drawn on 0..1.
    fig.scatter(x=[0, 1], y=[0, 1], visible=False, name=RANGE_ANCHOR)
    return fig, items


def shown_items(
    items: EngineItems, overlay: bool, engines: Sequence[str], columns: Sequence[str]
) -> list[LegendItem]:
    """The legend's series: the engines shown, the overlay's only while drawn, none of SGLang's
    where it has no value; each names its engine but for vLLM alone."""
    named = tuple(engines) != ("vllm",)
    return [
        replace(item, label=f"{ENGINE_NAMES[engine]} {item.label}") if named else item
        for engine, name, item in items
        if engine in engines
        and (overlay or name == "run")
        and not (engine == "sglang" and means_nothing_on_sglang(columns))
    ]


def empty_reason(reason: str, runs: int, engines: Sequence[str], columns: Sequence[str]) -> str:
    """Why a chart draws nothing, for ``runs`` runs on ``engines``."""
    if tuple(engines) == ("sglang",) and means_nothing_on_sglang(columns):
        return NOT_ON_SGLANG
    where = "in this run" if runs == 1 else "in either run" if runs == 2 else "in any run"
    if "sglang" in engines and means_nothing_on_sglang(columns):
        return f"{reason} {where} ({NOT_ON_SGLANG})"
    return f"{reason} {where}"


class RunCharts:
    """Charts of workload runs (``indices`` into CHARTS) on one engine-step axis, each with its
    legend, drawn from a source per SOURCE_KEYS."""

    def __init__(self, indices: Sequence[int], source_name: Callable[[str, str], str]) -> None:
        self.indices = list(indices)
        self.sources = [
            ColumnDataSource(chart_data(None, CHART_COLUMNS), name=source_name(*key))
            for key in SOURCE_KEYS
        ]
        # The run on each source (None: no data, as the sources start).
        self._charted: list[WorkloadRun | None] = [None] * len(SOURCE_KEYS)
        # One step axis for all: a chart with no value to draw (no preemption) still
        # shows the run's steps, and zooming one chart zooms them all.
        steps = DataRange1d()
        charts = [make_figure(CHARTS[index], self.sources, steps) for index in self.indices]
        self.figures = [fig for fig, _ in charts]
        self.titles = [title_pane(CHARTS[index]["title"]) for index in self.indices]
        # Hidden while its chart has nothing to draw (its legend then says so).
        self.panes = [pn.pane.Bokeh(fig, sizing_mode="stretch_width") for fig in self.figures]
        self.legend_items = [items for _, items in charts]
        self.legends = [ChartLegend(margin=(0, 10)) for _ in self.indices]
        # A series the learner hides in a legend is hidden on its chart.
        for fig, legend in zip(self.figures, self.legends, strict=True):
            legend.param.watch(functools.partial(self._on_hidden, fig), "hidden")

    def cells(self, whole_first: bool = False) -> list[pn.Column]:
        """Each chart under its title, above its legend, half a row wide (the first whole, if
        ``whole_first``)."""
        cells = zip(self.titles, self.panes, self.legends, strict=True)
        return [
            pn.Column(
                *cell,
                sizing_mode="stretch_width",
                min_width=320,
                styles={} if whole_first and index == 0 else HALF,
            )
            for index, cell in enumerate(cells)
        ]

    def chart(
        self, key: tuple[str, str], run: WorkloadRun | None, block_size: int | None = None
    ) -> None:
        """Put a run on the source for ``key`` (None: no data) unless it is there already; SGLang's
        slots in blocks of ``block_size`` tokens."""
        index = SOURCE_KEYS.index(key)
        if self._charted[index] is not run:
            self._charted[index] = run
            self.sources[index].data = chart_data(run, CHART_COLUMNS, block_size)

    @logged
    def _on_hidden(self, fig: figure, event: Any) -> None:
        for renderer in fig.renderers:
            if renderer.name == RANGE_ANCHOR:
                continue
            visible = renderer.name not in event.new
            if renderer.visible != visible:
                renderer.visible = visible

    def show_legends(
        self,
        labels: Sequence[str],
        runs: Sequence[WorkloadRun] | None,
        engines: Sequence[str],
    ) -> None:
        """Each chart's legend names the runs (``labels`` on ``engines``); a chart that draws
        nothing in ``runs`` is hidden with its title, and its legend says why."""
        overlay = len(labels) > 1
        count = len(labels) * len(engines)
        for index, heading, pane, legend, items in zip(
            self.indices, self.titles, self.panes, self.legends, self.legend_items, strict=True
        ):
            chart = CHARTS[index]
            title = chart["title"]
            if "sglang" in engines:
                title = chart.get("sglang_title", title)
            columns = [column for column, _ in chart["series"]]
            empty = runs is not None and draws_nothing(runs, columns)
            if empty:
                why = empty_reason(chart["empty"], count, engines, columns)
                html = lab_text("lab", "empty_chart", title=title, reason=why)
            else:
                shown = shown_items(items, overlay, engines, columns)
                html = render_chart_legend(title, shown, labels)
            update_changed(legend, html=html)
            update_changed(heading, object=title_html(title), visible=not empty)
            update_changed(pane, visible=not empty)


class CurveChart:
    """Hit rate against capacity (log x), a line per engine, the paper's cache and ratio."""

    def __init__(self) -> None:
        self.sources = {
            engine: ColumnDataSource(curve_columns([]), name=f"traces-source-{engine}")
            for engine in ENGINE_NAMES
        }
        self.paper = ColumnDataSource({"x": [], "y": [], "label": []}, name="traces-source-paper")
        self.x_range = Range1d(start=256, end=10_000_000)
        title, y_label, x_label = TEXTS["charts"]["curve"]
        self.title = title_pane(title)
        self.figure = fig = lab_figure(
            y_label,
            rate=True,
            x_axis_type="log",
            x_range=self.x_range,
            height=TRACES_CHART_HEIGHT,
            x_axis_label=x_label,
        )
        self.pane = pn.pane.Bokeh(fig, sizing_mode="stretch_width")
        fig.xaxis.formatter = NumeralTickFormatter(format="0.[0]a")
        for engine, source in self.sources.items():
            color, label = ENGINE_COLORS[engine], ENGINE_NAMES[engine]
            drawn: dict[str, Any] = {"source": source, "color": color, "legend_label": label}
            fig.line("capacity", "hit_rate", line_width=2, name=f"curve-{engine}", **drawn)
            fig.scatter("capacity", "hit_rate", size=7, name=f"points-{engine}", **drawn)
        fig.add_layout(
            Span(
                location=PAPER_LOCAL_CACHE_TOKENS,
                dimension="height",
                line_dash="dashed",
                line_color="#555555",
                line_width=1.5,
            )
        )
        # The dashed line says what it is (no legend takes a Span): along it, from the top,
        # clear of the legend on a phone's narrow chart.
        fig.add_layout(
            Label(
                x=PAPER_LOCAL_CACHE_TOKENS,
                y=1.0,
                x_offset=-3,
                angle=math.pi / 2,
                text=TEXTS["charts"]["curve_cache"].format(tokens=PAPER_LOCAL_CACHE_TOKENS),
                text_align="right",
                text_baseline="bottom",
                text_font_size="11px",
                text_color="#555555",
                name="paper-cache",
            )
        )
        fig.scatter(
            "x",
            "y",
            source=self.paper,
            marker="diamond",
            size=12,
            color="#1f8a4c",
            legend_label="paper's Table 2 ratio",
            name="paper-ratio",
        )
        # Left of the diamond, above it: the curve's top is at the chart's right edge.
        fig.text(
            "x",
            "y",
            text="label",
            source=self.paper,
            x_offset=-10,
            y_offset=-6,
            text_align="right",
            text_font_size="11px",
            text_color="#1f8a4c",
        )
        fig.legend.location = "top_left"
        self._legend_drawn()

    def _legend_drawn(self) -> None:
        """The legend names only what is drawn: an item without points would show no swatch."""
        for item in self.figure.legend.items:
            drawn = any(len(column) for column in item.renderers[0].data_source.data.values())
            if item.visible != drawn:
                item.visible = drawn

    def clear(self, capacities: Sequence[int]) -> None:
        """No points, and the capacity axis spanning ``capacities`` and the paper's cache."""
        for source in self.sources.values():
            source.data = curve_columns([])
        self.paper.data = {"x": [], "y": [], "label": []}
        self.x_range.update(
            start=capacities[0] / 1.5, end=max(capacities[-1], PAPER_LOCAL_CACHE_TOKENS) * 1.5
        )
        self._legend_drawn()

    def show_points(self, engine: str, points: Sequence[InOrderReplay]) -> None:
        self.sources[engine].data = curve_columns(points)
        self._legend_drawn()

    def show_paper_ratio(self, curve: TraceCurveRun) -> None:
        """The paper's ratio beside the curve's top, for a whole trace's curve only."""
        ratio = curve.paper_ratio
        if ratio is not None:
            self.paper.data = {
                "x": [float(curve.capacities[-1])],
                "y": [ratio],
                "label": [f"paper: {ratio:.0%}"],
            }
            self._legend_drawn()
