"""The workload lab page (`?lab=PRESET&engine=vllm|sglang|both`): knobs, a run of the
engines, Bokeh charts.

The figures are built once; a run only replaces the data of their ColumnDataSources,
two per engine (the learner's run, drawn solid, and the overlay, dashed; vLLM's and
SGLang's in colours of their own). Every knob has its message beside it; a run plays
in slices (app/data/lab.py), so the page shows progress and Stop works (app/views/lab_controls.py
holds what this page and the traces' share).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import panel as pn
import param
from bokeh.events import Event, Tap
from bokeh.models import (
    BasicTicker,
    ColumnDataSource,
    DataRange1d,
    NumeralTickFormatter,
    Range1d,
)
from bokeh.models.annotations import Span, Title
from bokeh.plotting import figure

from app.components import at_once
from app.components.chart_legend import ChartLegend
from app.data.lab import (
    DEFAULT_ENGINE,
    DEFAULT_TIMED_CAPACITY,
    DEFAULT_TRACE_REQUESTS,
    TRACES_PRESET,
    LabResult,
    LabRun,
    RunAhead,
    RunSteps,
    TraceCurve,
    TraceCurveRun,
    TraceTimedRun,
    available_traces,
    chart_data,
    check_knobs,
    curve_columns,
    default_preset,
    draws_nothing,
    engine_choice,
    load_trace,
    means_nothing_on_sglang,
    preset,
    presets,
    run_steps,
    start_side_runs,
    timed_problems,
)
from app.data.url import lab_run_playground_href
from app.host.errors import logged
from app.host.runtime import in_pyodide
from app.render.lab import (
    LegendItem,
    render_chart_legend,
    render_empty_chart,
    render_knob_error,
    render_lab_intro,
    render_lab_link,
    render_lab_notices,
    render_no_steps_on_sglang,
    render_outcome,
    render_progress,
    render_stale_note,
    render_step_view,
    step_hint,
)
from app.render.lab_playground import render_no_playground, render_open_in_playground
from app.render.lab_traces import (
    ENGINE_NAMES,
    render_curve_done,
    render_curve_progress,
    render_gap_sentences,
    render_timed_done,
    render_timed_intro,
    render_timed_progress,
    render_timed_result,
    render_traces_intro,
)
from app.views.lab_controls import (
    LAB_CSS,
    STYLESHEETS,
    LabGroup,
    attach_shared_models,
)
from engine.lab.request_trace import (
    TRACE_BLOCK_TOKENS,
    TraceEntry,
    TraceError,
    parse_trace_bytes,
)
from engine.lab.scenario import MODES, ScenarioError
from engine.lab.trace_replay import PAPER_LOCAL_CACHE_TOKENS, InOrderReplay, trace_name_of
from engine.lab.trace_timed import CANNOT_SHOW, DEFAULT_STEP_MS, TimedTraceRun
from engine.lab.workload import (
    KNOB_TYPES,
    SALT_POLICIES,
    Workload,
    WorkloadRun,
)

# A chart's height (px); the hit-rate chart gives its legend's line naming the runs its
# room.
CHART_HEIGHT = 240
HIT_RATE_CHART_HEIGHT = CHART_HEIGHT - 24
# The page around the lab's roots: the main entry point puts it in the page's head.
LAB_PAGE_CSS = Path(__file__).with_name("lab_page.css").read_text(encoding="utf-8")
# Not re-exported by name: the lab's stylesheets, shared with the traces' group.
__all__ = ["LAB_CSS", "STYLESHEETS", "attach_shared_models"]

RUN_COLOR = "#2f5fd0"
COMPARE_COLOR = "#e8590c"
# The sources: (engine, run) -> its name on the page (vLLM's as they always were).
SOURCE_KEYS = (("vllm", "run"), ("vllm", "compare"), ("sglang", "run"), ("sglang", "compare"))
SOURCE_NAMES = {
    key: f"lab-source-{'' if key[0] == 'vllm' else 'sglang-'}{key[1]}" for key in SOURCE_KEYS
}
# Each source's colour (SGLang's apart from vLLM's, both legible on white), and the pool
# chart's per series and engine.
RUN_COLORS = {
    ("vllm", "run"): RUN_COLOR,
    ("vllm", "compare"): COMPARE_COLOR,
    ("sglang", "run"): "#2b9348",
    ("sglang", "compare"): "#c2185b",
}
SERIES_COLORS = {
    "vllm": {
        "held_blocks": "#2f5fd0",
        "free_cached_blocks": "#1f8a4c",
        "free_empty_blocks": "#9aa5b1",
    },
    "sglang": {
        "held_blocks": "#7b3fb5",
        "free_cached_blocks": "#a86b00",
        "free_empty_blocks": "#c9b2dd",
    },
}
# The name of each chart's invisible renderer that gives its ranges a span (make_figure).
RANGE_ANCHOR = "range-anchor"

# knob -> its label beside the widget
KNOB_LABELS: dict[str, str] = {
    "requests": "Requests",
    "arrival": "Arrivals/step (0: all)",
    "shared_tokens": "Shared prompt (tokens)",
    "unique_tokens": "Unique part (tokens)",
    "output_tokens": "Output (tokens)",
    "num_gpu_blocks": "num_gpu_blocks",
    "block_size": "block_size (tokens)",
    "max_num_batched_tokens": "Token budget/step",
    "salt": "cache_salt",
    "users": "Users (salt per user)",
    "prepend_token": "Prepend a per-request token",
    "reset_step": "Reset before step (0: no)",
    "reset_mode": "Reset mode",
}
assert set(KNOB_LABELS) == set(KNOB_TYPES)

SALT_LABELS = {
    "no salt": "none",
    "one fixed salt": "fixed",
    "a salt per user": "per-user",
    "a fresh salt per request": "per-request",
}
assert set(SALT_LABELS.values()) == set(SALT_POLICIES)

# (title, y label, [(column, legend)], y from 0 to 1?)
CHARTS: tuple[tuple[str, str, tuple[tuple[str, str], ...], bool], ...] = (
    (
        "Hit rate: prefix_cache_hits / prefix_cache_queries",
        "hit rate",
        (("cumulative_hit_rate", "cumulative"), ("hit_rate", "this step")),
        True,
    ),
    (
        "prefix_cache_queries and prefix_cache_hits (tokens, so far)",
        "tokens",
        (("cumulative_queries", "queries"), ("cumulative_hits", "hits")),
        False,
    ),
    (
        "Pool usage (blocks)",
        "blocks",
        (
            ("held_blocks", "held"),
            ("free_cached_blocks", "free, cached"),
            ("free_empty_blocks", "free, empty"),
        ),
        False,
    ),
    ("Evictions per step (BlockRemoved)", "blocks", (("evictions", "evicted"),), False),
    (
        "Preemptions",
        "requests",
        (("cumulative_preemptions", "so far"), ("preemptions", "this step")),
        False,
    ),
    (
        "Survival fraction: preempted_hits / preempted_queries",
        "fraction",
        (("survival_fraction", "so far"),),
        True,
    ),
    (
        "Tokens to prefill (so far)",
        "tokens",
        (
            ("cumulative_prefill_tokens_without_cache", "without the cache"),
            ("cumulative_prefill_tokens", "with the cache"),
        ),
        False,
    ),
)
# The charts whose title changes once SGLang's runs are on them (its pool counts KV
# slots, drawn in blocks' worth: app/data/lab.py, chart_data).
SGLANG_TITLES = {
    2: "Pool usage (blocks; SGLang: KV slots / block_size)",
    3: "Evictions per step (vLLM: BlockRemoved blocks; SGLang: evicted tokens / block_size)",
}
# Why a chart draws nothing, when each of its series is all zeros or absent (one per
# chart, in CHARTS' order): said in one line instead of an empty frame.
EMPTY_REASONS = (
    "no prefix-cache hit",
    "no prefix-cache query",
    "no block in the pool",
    "no block was evicted",
    "no request was preempted",
    "no preempted request came back to a cache hit",
    "no token to prefill",
)
assert len(EMPTY_REASONS) == len(CHARTS)
# Scatter, not lines: a per-step rate has gaps on steps that admitted nobody.
SCATTER_COLUMNS = frozenset({"hit_rate"})
LINE_DASHES = ("solid", "dotted", "dotdash")
RUN_NAMES = ("run", "compare")
# Why a chart of what SGLang does not model draws nothing for it.
NOT_ON_SGLANG = "SGLang's modelled scheduler never preempts"
# The columns the charts draw: the only ones sent to the browser.
CHART_COLUMNS = tuple(
    dict.fromkeys(["step", *(column for _, _, series, _ in CHARTS for column, _ in series)])
)
# A run still going after this long shows its progress and turns Stop on (a shorter
# one could not be stopped in time anyway, and each update costs the page time).
LONG_RUN_S = 1.0
# A knob's cell: three side by side in the lab's left column on a wide screen, four
# at 800 px, two on a phone; wider cells share a row's spare room.
# A run still going after this long marks the results shown as stale (a shorter one
# shows its own before the mark could be read: marking it would only make them blink).
STALE_AFTER_S = 0.2
# The class of the outcome's and the charts' roots while they show stale results (lab.css).
STALE = "lab-stale"
KNOB_MIN_WIDTH = 168
KNOB_MAX_WIDTH = 260


WRAPPING: dict[str, Any] = {"flex_wrap": "wrap", "sizing_mode": "stretch_width"}
# A chart's share of a row of charts: two side by side on a wide screen.
HALF = {"flex": "1 1 520px"}


def update_changed(obj: param.Parameterized, **values: Any) -> None:
    """Set only the values that differ: a knob change checks every knob twice, and each
    parameter set, even to the same value, costs Panel's machinery a fraction of a ms."""
    changed = {name: value for name, value in values.items() if getattr(obj, name) != value}
    if changed:
        obj.param.update(**changed)


def knob_widget(knob: str, value: Any) -> pn.widgets.Widget:
    fit = {"label": KNOB_LABELS[knob], "value": value, "sizing_mode": "stretch_width"}
    if knob == "salt":
        return at_once.Select(options=SALT_LABELS, **fit)
    if knob == "reset_mode":
        return at_once.Select(options=list(MODES), **fit)
    if KNOB_TYPES[knob] is bool:
        return at_once.Checkbox(**fit)
    return at_once.IntInput(**fit)


# A chart's legend items: (engine, run name, item).
EngineItems = list[tuple[str, str, LegendItem]]


def make_figure(
    title: str,
    y_label: str,
    series: Sequence[tuple[str, str]],
    unit_range: bool,
    sources: Sequence[ColumnDataSource],
    steps: DataRange1d,
) -> tuple[figure, EngineItems]:
    """A chart of every run's series (``sources`` in SOURCE_KEYS' order), and its legend's
    items (drawn in HTML below it by ChartLegend: Bokeh's legend cost every repaint a
    forced layout). ``steps`` is the engine-step axis, shared by every chart."""
    fig = figure(
        title=title,
        x_range=steps,
        height=CHART_HEIGHT,
        sizing_mode="stretch_width",
        x_axis_label="engine step",
        y_axis_label=y_label,
        tools="pan,wheel_zoom,box_zoom,reset,save,hover",
        toolbar_location="right",
        output_backend="canvas",
    )
    # Counts start at 0 even when they stay 0; rates show their whole 0..1 scale.
    fig.y_range = Range1d(start=-0.02, end=1.05) if unit_range else DataRange1d(start=0)
    fig.yaxis.formatter = NumeralTickFormatter(format="0%" if unit_range else "0,0")
    if not unit_range:
        # Counts are whole numbers: a chart of zeros would otherwise tick at 0.2, 0.4, ...
        # and label each of them "0" or "1".
        fig.yaxis.ticker = BasicTicker(min_interval=1)
    items: EngineItems = []
    for index, (column, legend_text) in enumerate(series):
        for source, (engine, name) in zip(sources, SOURCE_KEYS, strict=True):
            by_series = SERIES_COLORS[engine]
            color = by_series.get(column, RUN_COLORS[engine, name])
            scatter = column in SCATTER_COLUMNS
            dash = "solid" if name == "run" else "dashed"
            item = LegendItem(
                key=f"{column}/{'' if engine == 'vllm' else 'sglang-'}{name}",
                label=f"{legend_text} ({dash})",
                color=color,
                dash=dash if index == 0 or column in by_series else LINE_DASHES[index],
                marker=("circle" if name == "run" else "triangle") if scatter else None,
                alpha=0.6 if scatter else 1.0 if index == 0 else 0.75,
            )
            items.append((engine, name, item))
            if item.marker is not None:
                fig.scatter(
                    "step",
                    column,
                    source=source,
                    color=color,
                    size=5,
                    alpha=item.alpha,
                    marker=item.marker,
                    name=item.key,
                )
            else:
                fig.line(
                    "step",
                    column,
                    source=source,
                    color=color,
                    line_width=2,
                    line_dash=item.dash,
                    alpha=item.alpha,
                    name=item.key,
                )
    # The sources are empty until the first run ends, and Bokeh cannot range a chart with
    # no data: it warns "could not set initial ranges" in the console at every repaint.
    # An invisible renderer over (0, 0)-(1, 1) gives both axes a span from the start;
    # steps and counts start at 0 anyway, and a count that stays 0 is drawn on 0..1.
    fig.scatter(x=[0, 1], y=[0, 1], visible=False, name=RANGE_ANCHOR)
    return fig, items


def shown_items(
    items: EngineItems, overlay: bool, engines: Sequence[str], columns: Sequence[str]
) -> list[LegendItem]:
    """The legend lists the series of the engines shown, the overlay's only while it is
    drawn, none of SGLang's where it has no value (``columns`` it does not model); each
    names its engine but for vLLM alone."""
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
    """Charts of workload runs (``indices`` into CHARTS), drawn from ``sources`` (in
    SOURCE_KEYS' order) on one engine-step axis, each with its legend below it: the
    presets' page draws every chart, the traces' page the timed replay's few."""

    def __init__(self, indices: Sequence[int], sources: Sequence[ColumnDataSource]) -> None:
        self.indices = list(indices)
        # One step axis for all: a chart with no value to draw (no preemption) still
        # shows the run's steps, and zooming one chart zooms them all.
        steps = DataRange1d()
        charts = [make_figure(*CHARTS[index], sources, steps) for index in self.indices]
        self.figures = [fig for fig, _ in charts]
        # Hidden while its chart has nothing to draw (its legend then says so).
        self.panes = [pn.pane.Bokeh(fig, sizing_mode="stretch_width") for fig in self.figures]
        self.legend_items = [items for _, items in charts]
        self.legends = [ChartLegend(margin=(0, 10)) for _ in self.indices]
        # A series the learner hides in a legend is hidden on its chart.
        for fig, legend in zip(self.figures, self.legends, strict=True):
            legend.param.watch(functools.partial(self._on_hidden, fig), "hidden")

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
        """Each chart's legend names the runs (``labels``, on each of ``engines``); a chart
        whose series are all zero or absent in ``runs`` is hidden, and its legend says so
        in one line. The charts of SGLang's KV slots say how they are drawn."""
        overlay = len(labels) > 1
        count = len(labels) * len(engines)
        for index, fig, pane, legend, items in zip(
            self.indices, self.figures, self.panes, self.legends, self.legend_items, strict=True
        ):
            chart, reason = CHARTS[index], EMPTY_REASONS[index]
            title = SGLANG_TITLES.get(index, chart[0]) if "sglang" in engines else chart[0]
            heading = fig.title
            if isinstance(heading, Title) and heading.text != title:
                heading.text = title
            columns = [column for column, _ in chart[2]]
            empty = runs is not None and draws_nothing(runs, columns)
            if empty:
                html = render_empty_chart(title, empty_reason(reason, count, engines, columns))
            else:
                shown = shown_items(items, overlay, engines, columns)
                html = render_chart_legend(title, shown, labels)
            update_changed(legend, html=html)
            update_changed(pane, visible=not empty)


class LabView(LabGroup):
    """Picks a preset, knobs and the engines, runs them, draws the charts."""

    def __init__(
        self,
        preset_name: str,
        notices: Sequence[str] = (),
        engine: str = DEFAULT_ENGINE,
        **params: Any,
    ) -> None:
        super().__init__(preset_name, engine, **params)
        self._preset = preset(preset_name)
        workload = self._preset.workload
        self.knobs: dict[str, pn.widgets.Widget] = {
            knob: knob_widget(knob, value) for knob, value in workload.knobs().items()
        }
        self.knob_errors: dict[str, pn.pane.HTML] = {
            knob: pn.pane.HTML(
                "",
                visible=False,
                stylesheets=STYLESHEETS,
                margin=(0, 10),
                css_classes=["knob-error"],
            )
            for knob in self.knobs
        }
        self.overlay = at_once.Checkbox(label=self._overlay_label(), value=True)
        self.outcome = pn.pane.HTML("", stylesheets=STYLESHEETS, sizing_mode="stretch_width")
        # Above the first chart while the results shown are not the knobs' (lab.css dims
        # the rest of the results then).
        self.stale_note = pn.pane.HTML(
            "",
            visible=False,
            stylesheets=STYLESHEETS,
            sizing_mode="stretch_width",
            margin=(0, 10),
            css_classes=["lab-stale-note"],
        )
        self.notice = pn.pane.HTML(
            render_lab_notices(notices),
            visible=bool(notices),
            stylesheets=STYLESHEETS,
        )
        self.sources = [
            ColumnDataSource(chart_data(None, CHART_COLUMNS), name=SOURCE_NAMES[key])
            for key in SOURCE_KEYS
        ]
        # The run on each source (None: no data, as the sources start).
        self._charted: list[WorkloadRun | None] = [None] * len(SOURCE_KEYS)
        self.charts = RunCharts(range(len(CHARTS)), self.sources)
        self.figures = self.charts.figures
        # The hit-rate chart gives its legend's line naming the runs the room it takes, so
        # that the chart and its legend stay on the first screen (lab_page.css).
        self.figures[0].height = HIT_RATE_CHART_HEIGHT
        self.chart_panes = self.charts.panes
        self.legends = self.charts.legends
        labels = [self._preset.label]
        if self.overlay.value and self._preset.compare:
            labels.append(self._preset.compare_label)
        self._show_legends(labels, None, self.engines)
        self.hint = pn.pane.HTML("", stylesheets=STYLESHEETS, sizing_mode="stretch_width")
        self.step_view = pn.pane.HTML(
            "", visible=False, stylesheets=STYLESHEETS, sizing_mode="stretch_width"
        )
        self._steps: RunSteps | None = None
        self.result: LabResult | None = None
        self._run: LabRun | None = None
        self._ahead: RunAhead | None = None
        self._running = False  # Stop is on: the run has taken long enough to be stopped
        self._loading_preset = False

        self.preset_select.param.watch(self._on_preset, "value")
        self.engine.param.watch(self._on_engine, "value")
        for widget in (*self.knobs.values(), self.overlay):
            widget.param.watch(self._on_knob, "value")
        for fig in self.figures:
            fig.on_event(Tap, self._on_tap)
        self.roots = self._build()

    # -- layout ------------------------------------------------------------------
    def _build(self) -> tuple[pn.Column, pn.Column, pn.Column]:
        """The page as three layout roots: the controls; the hit-rate chart with the
        preset's expected outcome; the other charts (lab_page.css places them).

        When any part of a root changes size, Bokeh lays out that whole root again,
        measuring every axis of every figure in it. The knobs' messages and the outcome's
        text change size with most knob changes; in their own roots, they leave the six
        charts of the last root alone (docs/performance.md). The first chart is kept
        with the outcome so that, one under the other on a narrow screen, the knobs come
        straight before a chart."""
        knob_cells = [
            pn.Column(
                widget,
                self.knob_errors[knob],
                margin=0,
                min_width=KNOB_MIN_WIDTH,
                max_width=KNOB_MAX_WIDTH,
                sizing_mode="stretch_width",
                styles={"flex": f"1 1 {KNOB_MIN_WIDTH}px"},
                css_classes=[f"knob-{knob}"],
            )
            for knob, widget in self.knobs.items()
        ]
        controls = pn.Column(
            pn.pane.HTML(
                render_lab_intro(),
                stylesheets=STYLESHEETS,
                sizing_mode="stretch_width",
            ),
            self.notice,
            # Rows that wrap: a phone is narrower than a preset and its overlay's label.
            pn.FlexBox(self.preset_select, self.engine, self.overlay, **WRAPPING),
            pn.FlexBox(*knob_cells, **WRAPPING),
            self.buttons_row(),
            sizing_mode="stretch_width",
        )
        charts = [
            pn.Column(pane, legend, sizing_mode="stretch_width", min_width=320)
            for pane, legend in zip(self.chart_panes, self.legends, strict=True)
        ]
        for chart in charts[1:]:
            chart.styles = HALF
        others = pn.FlexBox(*charts[1:], flex_wrap="wrap", sizing_mode="stretch_width")
        return (
            lab_root("lab-controls", controls, margin=(10, 16, 0, 16)),
            lab_root(
                "lab-outcome",
                self.stale_note,
                charts[0],
                self.outcome,
                self.hint,
                margin=(0, 16, 0, 16),
            ),
            lab_root(
                "lab-charts", others, self.step_view, self.address_bar, margin=(0, 16, 10, 16)
            ),
        )

    def _show_legends(
        self,
        labels: Sequence[str],
        runs: Sequence[WorkloadRun] | None,
        engines: Sequence[str],
    ) -> None:
        self.charts.show_legends(labels, runs, engines)

    def _show_staleness(self, playing: bool) -> None:
        """Mark the results shown as stale while they are not the knobs' (a bad knob, a
        run of new knobs playing or stopped), with what they are for; unmark them once
        they are. ``playing``: a run of the knobs is playing."""
        changes = (
            []
            if self.result is None
            else self.result.changes_from(
                self._preset, self.knob_values(), self.overlay.value, self.engines
            )
        )
        stale = bool(changes)
        with pn.io.hold():
            note = render_stale_note(changes, playing) if stale else ""
            update_changed(self.stale_note, object=note, visible=stale)
            for root in self.roots[1:]:
                classes = [c for c in root.css_classes if c != STALE] + ([STALE] if stale else [])
                update_changed(root, css_classes=classes)

    def _overlay_label(self) -> str:
        compare = self._preset.compare_label
        return f"Overlay: {compare}" if self._preset.compare else "Overlay (this preset has none)"

    # -- the learner's actions -----------------------------------------------------
    def knob_values(self) -> dict[str, Any]:
        return {knob: widget.value for knob, widget in self.knobs.items()}

    def checked_workload(self) -> Workload | None:
        """The knobs' workload; each bad knob's message is shown beside it."""
        workload, found = check_knobs(self.knob_values())
        for knob, pane in self.knob_errors.items():
            message = found.get(knob, "")
            update_changed(pane, object=render_knob_error(message), visible=bool(message))
        update_changed(self.run_button, disabled=bool(found) or self._running)
        return None if found else workload

    @logged
    def _on_preset(self, event: Any) -> None:
        if self.open_other_group(event.new):
            return
        self._preset = preset(event.new)
        self.show_address()
        self.overlay.label = self._overlay_label()
        self._loading_preset = True
        try:
            with pn.io.hold():
                for knob, value in self._preset.workload.knobs().items():
                    self.knobs[knob].value = value
        finally:
            self._loading_preset = False
        pn.state.execute(self.start)

    @logged
    def _on_knob(self, *_: Any) -> None:
        if self._loading_preset:
            return
        if self.checked_workload() is not None:
            pn.state.execute(self.start)
        else:
            self._show_staleness(playing=False)

    @logged
    def _on_engine(self, *_: Any) -> None:
        self.show_address()
        self._on_knob()

    async def start(self) -> None:
        """Run the knobs' workload on the engines asked for (stopping a run in progress),
        then show it."""
        workload = self.checked_workload()
        if workload is None:
            return
        if self._run is not None:
            self._run.stop()
        if self._ahead is not None:
            self._ahead.stop()
        engines = self.engines
        run = self._run = LabRun(self._preset, workload, self.overlay.value, engines=engines)
        if run.runners:
            self.status.object = render_progress(0.0)
        started = time.perf_counter()

        marked = False

        def show_progress(share: float) -> None:
            # Each button or status change costs the page a layout of the controls' root
            # (and, in Pyodide, Panel's bookkeeping), so a short run changes none.
            nonlocal marked
            took = time.perf_counter() - started
            if not marked and took > STALE_AFTER_S:
                marked = True
                self._show_staleness(playing=True)
            if took > LONG_RUN_S:
                self._show_running(True)
                self.status.object = render_progress(share)

        def show_learners_run(learners: WorkloadRun) -> None:
            # The overlay's run plays next: the learner's own lines move first. (A
            # Bokeh model is changed inside a hold, which sends the change safely.)
            if run is self._run:
                with pn.io.hold():
                    self._chart((learners.engine, "run"), learners)

        result = await run.play(show_progress, show_learners_run)
        if run is not self._run:
            return  # a newer run took over
        self._run = None
        with pn.io.hold():
            self._show_running(False)
            if result is None:
                self.status.object = "Stopped: the charts still show the last finished run."
                self._show_staleness(playing=False)
            else:
                self.show_result(result)
        if result is not None:
            # While the learner reads the charts, the runs of the knob changes the
            # seed's experiments make next play, so they show at once. This RunAhead
            # itself, not whichever is newest when the callback runs: a quick next
            # change would otherwise have its RunAhead played twice.
            ahead = self._ahead = RunAhead(
                self._preset, workload, self.overlay.value, engines=engines
            )
            # The sides start once a run is shown, not with the page: a side's start (a
            # Pyodide worker, on the static site) would compete with the first run.
            start_side_runs()

            async def play_ahead() -> None:
                await ahead.play()

            pn.state.execute(play_ahead)

    def _show_running(self, running: bool) -> None:
        """Stop on and Run off while a run goes on (Run stays off for bad knobs)."""
        if self._running != running:
            self._running = running
            self.set_running(running, can_run=self.checked_workload() is not None)

    def show_result(self, result: LabResult) -> None:
        """Put a finished run on the charts: new data, the same figures."""
        self.result = result
        with pn.io.hold():
            for engine, name in SOURCE_KEYS:
                self._chart((engine, name), result.run_of(engine, compare=name == "compare"))
            runs = result.labelled_runs
            self._show_legends(result.run_labels, [run for _, run in runs], result.engines)
            self.outcome.object = render_outcome(
                result.preset.title, result.expected_outcomes, runs
            )
            self._show_staleness(playing=False)
            # The step view and the playground step vLLM's engine (SGLang's run has no
            # timeline to step here).
            vllm = result.run_of("vllm")
            self._steps = None if vllm is None else run_steps(vllm.workload, vllm.num_steps)
            self._show_hint()
            update_changed(self.step_view, visible=False)
            update_changed(self.status, object=done_text(result))

    def _show_hint(self, step: int = 0, engine_step: int | None = None) -> None:
        """How to see a step, and the link that opens the run as a playground at
        timeline step ``step`` (after ``engine_step``, if the learner picked one)."""
        assert self.result is not None
        run = self.result.run_of("vllm")
        if run is None:
            update_changed(self.hint, object=render_no_steps_on_sglang())
            return
        try:
            href = lab_run_playground_href(run.workload, run.num_steps, step)
            link = render_open_in_playground(href, engine_step)
        except ScenarioError as error:
            link = render_no_playground(str(error))
        hint = step_hint(self._steps is not None, vllms=self.result.names_engines)
        update_changed(self.hint, object=hint + link)

    def _chart(self, key: tuple[str, str], run: WorkloadRun | None) -> None:
        """Put a run on the charts' source for ``key`` (engine, "run" or "compare"),
        unless that run is on it already (an overlay reused, a run shown first)."""
        index = SOURCE_KEYS.index(key)
        if self._charted[index] is not run:
            self._charted[index] = run
            self.sources[index].data = chart_data(run, CHART_COLUMNS)

    @logged
    def _on_tap(self, event: Event) -> None:
        if self._steps is None or not isinstance(event, Tap) or event.x is None:
            return
        self.show_step(round(event.x))

    def show_step(self, engine_step: int) -> None:
        """The step view of the learner's run after that engine step (nearest one)."""
        if self._steps is None:
            return
        index = self._steps.index(engine_step)
        shown, last = self._steps.after_step.index(index) + 1, len(self._steps.after_step)
        with pn.io.hold():
            self.step_view.object = render_step_view(self._steps.timeline, index, shown, last)
            self.step_view.visible = True
            # The playground link opens at this step too.
            self._show_hint(index, shown)


def lab_root(role: str, *children: Any, margin: tuple[int, ...]) -> pn.Column:
    """One of the lab's three layout roots; ``role`` is its class in lab_page.css."""
    return pn.Column(
        *children,
        margin=margin,
        sizing_mode="stretch_width",
        max_width=1280,
        stylesheets=[LAB_CSS],
        styles={"margin": "0 auto"},
        css_classes=["workload-lab", role],
    )


def done_text(result: LabResult) -> str:
    """The status line once the runs are shown: the requests, and each engine's steps
    (short: the line has room for about 50 characters)."""
    requests = f"Done: {result.run.workload.requests:,} requests"
    if len(result.engines) == 1:
        return f"{requests} in {result.run.num_steps:,} engine steps."
    steps = ", ".join(
        f"{ENGINE_NAMES[run.engine]} {run.num_steps:,} steps" for run, _ in result.engine_runs
    )
    return f"{requests}: {steps}."


def open_lab(preset_name: str, engine_word: str | None = None) -> LabView | TraceLabView:
    """The lab at `?lab=PRESET&engine=WORD`: an unknown name opens the default preset, an
    unknown engine vLLM, each with a notice. The first run starts once the page is
    loaded; `?lab=real-traces` opens the traces' group."""
    engine, engine_notice = engine_choice(engine_word)
    notices: list[str] = [engine_notice] if engine_notice else []
    if preset_name == TRACES_PRESET:
        traces = TraceLabView(notices, engine)
        pn.state.onload(traces.start)
        return traces
    names = presets()
    chosen = preset_name or default_preset()
    if chosen not in names:
        notices.append(
            f"Ignored lab={preset_name!r}: not one of {', '.join([*names, TRACES_PRESET])}. "
            f"Showing {default_preset()!r}."
        )
        chosen = default_preset()
    view = LabView(chosen, notices, engine)
    pn.state.onload(view.start)
    return view


def lab_link_pane() -> pn.pane.HTML:
    """The main page's way into the lab."""
    return pn.pane.HTML(
        render_lab_link(default_preset()),
        stylesheets=STYLESHEETS,
        margin=(0, 0),
    )


# -- Real traces (`?lab=real-traces`): a trace's hit-rate curve against capacity -------------

TRACES_CHART_HEIGHT = 320
ENGINE_COLORS = {"vllm": RUN_COLOR, "sglang": COMPARE_COLOR}
YOUR_FILE = "your file"
# Smaller blocks than the trace's 512 hash many more blocks: only on a slice this small.
SMALL_BLOCKS_MAX_REQUESTS = 2_000
MIN_BLOCK_SIZE, MAX_BLOCK_SIZE = 16, 4_096
# The replay with time's charts (indices into CHARTS): the hit rate, the pool, preemptions
# and the survival fraction, where time shows (concurrency, eviction, preemption).
TIMED_CHARTS = (0, 2, 4, 5)
# A timed knob's message goes beside its widget (the engine's names for them).
TIMED_LABEL = "with time"
TIMED_KNOB_CELLS = {"capacity_tokens": "capacity", "step_ms": "step_ms"}


def check_trace_knobs(requests: Any, block_size: Any, available: int) -> dict[str, str]:
    """A message per trace knob that is wrong (none: the knobs can run)."""
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


def curve_figure(
    sources: dict[str, ColumnDataSource], paper: ColumnDataSource
) -> tuple[figure, Range1d]:
    """Hit rate against capacity (log x), one line per engine, the paper's one node's
    local cache (dashed) and its Table 2 ratio (a diamond beside the curve's top)."""
    x_range = Range1d(start=256, end=10_000_000)
    fig = figure(
        title="Prefix cache hit rate against cache capacity (requests in order)",
        x_axis_type="log",
        x_range=x_range,
        y_range=Range1d(start=-0.02, end=1.05),
        height=TRACES_CHART_HEIGHT,
        sizing_mode="stretch_width",
        x_axis_label="cache capacity (tokens)",
        y_axis_label="hit rate",
        tools="pan,wheel_zoom,box_zoom,reset,save,hover",
        toolbar_location="right",
        output_backend="canvas",
    )
    fig.yaxis.formatter = NumeralTickFormatter(format="0%")
    fig.xaxis.formatter = NumeralTickFormatter(format="0.[0]a")
    for engine, source in sources.items():
        color = ENGINE_COLORS[engine]
        label = ENGINE_NAMES[engine]
        fig.line(
            "capacity",
            "hit_rate",
            source=source,
            color=color,
            line_width=2,
            legend_label=label,
            name=f"curve-{engine}",
        )
        fig.scatter(
            "capacity",
            "hit_rate",
            source=source,
            color=color,
            size=7,
            legend_label=label,
            name=f"points-{engine}",
        )
    fig.add_layout(
        Span(
            location=PAPER_LOCAL_CACHE_TOKENS,
            dimension="height",
            line_dash="dashed",
            line_color="#555555",
            line_width=1.5,
        )
    )
    fig.scatter(
        "x",
        "y",
        source=paper,
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
        source=paper,
        x_offset=-10,
        y_offset=-6,
        text_align="right",
        text_font_size="11px",
        text_color="#1f8a4c",
    )
    fig.legend.location = "top_left"
    return fig, x_range


class TraceLabView(LabGroup):
    """The "Real traces" group: a trace, a slice, the block size and the engine as knobs;
    the curve drawn point by point, with progress and Stop; the gap to the paper."""

    shows_traces = True

    def __init__(
        self, notices: Sequence[str] = (), engine: str = DEFAULT_ENGINE, **params: Any
    ) -> None:
        super().__init__(TRACES_PRESET, engine, **params)
        shipped = available_traces()
        self.trace_select = at_once.Select(
            label="Trace",
            options=[*shipped, YOUR_FILE],
            value=shipped[0] if shipped else YOUR_FILE,
            width=200,
        )
        self.requests = at_once.IntInput(
            label="Requests (first N; 0: all)", value=DEFAULT_TRACE_REQUESTS, width=200
        )
        self.block_size = at_once.IntInput(
            label="block_size (vLLM, tokens)", value=TRACE_BLOCK_TOKENS, width=200
        )
        self.upload = pn.widgets.FileInput(accept=".jsonl,.json,.gz", width=240)
        self.step_ms = at_once.FloatInput(
            label="Step time (ms, with time)", value=DEFAULT_STEP_MS, width=200
        )
        self.capacity = at_once.IntInput(
            label="Capacity (tokens, with time)", value=DEFAULT_TIMED_CAPACITY, width=200
        )
        self.timed_button = pn.widgets.Button(label="Run with time", width=130)
        self.errors: dict[str, pn.pane.HTML] = {
            name: pn.pane.HTML(
                "",
                visible=False,
                stylesheets=STYLESHEETS,
                margin=(0, 10),
                css_classes=["knob-error"],
            )
            for name in ("requests", "block_size", "upload", "step_ms", "capacity")
        }
        self._uploaded: list[TraceEntry] | None = None
        self.sources = {
            engine: ColumnDataSource(curve_columns([]), name=f"traces-source-{engine}")
            for engine in ENGINE_NAMES
        }
        self.paper = ColumnDataSource({"x": [], "y": [], "label": []}, name="traces-source-paper")
        self.figure, self._x_range = curve_figure(self.sources, self.paper)
        self.chart = pn.pane.Bokeh(self.figure, sizing_mode="stretch_width")
        self.gap = pn.pane.HTML("", stylesheets=STYLESHEETS, sizing_mode="stretch_width")
        self.notice = pn.pane.HTML(
            render_lab_notices(notices), visible=bool(notices), stylesheets=STYLESHEETS
        )
        # The replay with time: the workload lab's charts of a run (one source per
        # SOURCE_KEYS, the overlay's left empty) and its numbers.
        self.timed_sources = [
            ColumnDataSource(chart_data(None, CHART_COLUMNS), name=f"timed-source-{e}-{n}")
            for e, n in SOURCE_KEYS
        ]
        self.timed_charts = RunCharts(TIMED_CHARTS, self.timed_sources)
        self.timed_charts.show_legends([TIMED_LABEL], None, self.engines)
        self.timed_intro = pn.pane.HTML(
            render_timed_intro(CANNOT_SHOW), stylesheets=STYLESHEETS, sizing_mode="stretch_width"
        )
        self.timed_numbers = pn.pane.HTML("", stylesheets=STYLESHEETS, sizing_mode="stretch_width")
        # The curve's or the replay with time's, whichever plays: one at a time.
        self._run: TraceCurveRun | TraceTimedRun | None = None
        self.curve: TraceCurve | None = None
        self.timed: list[TimedTraceRun] | None = None
        self.timed_button.on_click(self._on_timed)
        self.preset_select.param.watch(self._on_preset, "value")
        self.engine.param.watch(lambda _: self.show_address(), "value")
        self.upload.param.watch(self._on_upload, "value")
        self.roots = self._build()

    def _build(self) -> tuple[pn.Column, pn.Column]:
        buttons = self.buttons_row()
        buttons.insert(1, self.timed_button)

        def cell(widget: pn.widgets.Widget, name: str, error: bool = False) -> pn.Column:
            errors = [self.errors[name]] if error else []
            return pn.Column(widget, *errors, margin=0, css_classes=[f"traces-{name}"])

        controls = pn.Column(
            pn.pane.HTML(
                render_traces_intro(DEFAULT_TRACE_REQUESTS if in_pyodide() else None),
                stylesheets=STYLESHEETS,
                sizing_mode="stretch_width",
            ),
            self.notice,
            pn.FlexBox(
                cell(self.preset_select, "preset"),
                cell(self.trace_select, "trace"),
                cell(self.requests, "requests", error=True),
                cell(self.block_size, "block_size", error=True),
                cell(self.engine, "engine"),
                cell(self.upload, "upload", error=True),
                cell(self.step_ms, "step_ms", error=True),
                cell(self.capacity, "capacity", error=True),
                **WRAPPING,
            ),
            buttons,
            sizing_mode="stretch_width",
        )
        timed_charts = [
            pn.Column(pane, legend, sizing_mode="stretch_width", min_width=320, styles=HALF)
            for pane, legend in zip(self.timed_charts.panes, self.timed_charts.legends, strict=True)
        ]
        timed = pn.Column(
            self.timed_intro,
            pn.FlexBox(*timed_charts, **WRAPPING),
            self.timed_numbers,
            sizing_mode="stretch_width",
            css_classes=["lab-timed"],
        )
        return (
            lab_root("lab-controls", controls, margin=(10, 16, 0, 16)),
            lab_root(
                "lab-traces",
                self.chart,
                self.gap,
                timed,
                self.address_bar,
                margin=(0, 16, 10, 16),
            ),
        )

    def _show_error(self, name: str, message: str) -> None:
        update_changed(self.errors[name], object=render_knob_error(message), visible=bool(message))

    @logged
    def _on_upload(self, event: Any) -> None:
        """A learner's own trace: read by the engine; a bad line's message beside it."""
        if not event.new:
            return
        try:
            self._uploaded = parse_trace_bytes(event.new)
        except TraceError as error:
            self._uploaded = None
            self._show_error("upload", str(error))
            return
        self._show_error("upload", "")
        self.trace_select.value = YOUR_FILE

    @logged
    def _on_preset(self, event: Any) -> None:
        self.open_other_group(event.new)

    async def _entries(self) -> tuple[str, list[TraceEntry]] | None:
        """The trace's name and all its requests; None (and a message) when there is none."""
        name = self.trace_select.value
        if name == YOUR_FILE:
            if self._uploaded is None:
                self._show_error("upload", "Choose a trace file (JSON lines, or gzipped)")
                return None
            filename = self.upload.filename or "your_trace.jsonl"
            return trace_name_of(filename), self._uploaded
        try:
            return name, list(await load_trace(name))
        except TraceError as error:
            self.status.object = render_knob_error(str(error))
            return None

    async def checked_slice(self) -> tuple[str, list[TraceEntry], bool, int] | None:
        """The trace's name, the slice the knobs ask for, whether it is the whole trace,
        and the block size; each bad knob's message is shown beside it."""
        chosen = await self._entries()
        if chosen is None:
            return None
        name, entries = chosen
        requests, block_size = self.requests.value, self.block_size.value
        found = check_trace_knobs(requests, block_size, len(entries))
        for knob in ("requests", "block_size"):
            self._show_error(knob, found.get(knob, ""))
        if found or block_size is None:
            return None
        count = requests or len(entries)
        return name, entries[:count], count >= len(entries), block_size

    async def checked_run(self) -> TraceCurveRun | None:
        """The curve the knobs ask for; each bad knob's message is shown beside it."""
        chosen = await self.checked_slice()
        if chosen is None:
            return None
        name, entries, whole, block_size = chosen
        return TraceCurveRun(name, entries, whole, block_size, self.engines)

    async def checked_timed_run(self) -> TraceTimedRun | None:
        """The replay with time the knobs ask for; each bad knob's message is shown
        beside it (one the page has no widget for, in the status line)."""
        chosen = await self.checked_slice()
        if chosen is None:
            return None
        _, entries, _, block_size = chosen
        step_ms, capacity = self.step_ms.value, self.capacity.value
        found: dict[str, str] = {}
        if step_ms is None:
            found["step_ms"] = "Step time needs a value (ms)"
        if capacity is None:
            found["capacity_tokens"] = "Capacity needs a value (tokens)"
        if step_ms is not None and capacity is not None:
            found = timed_problems(entries, self.engines, capacity, block_size, step_ms)
        shown = {TIMED_KNOB_CELLS.get(knob, knob): message for knob, message in found.items()}
        for name in self.errors:
            if name != "upload":
                self._show_error(name, shown.pop(name, ""))
        if shown:
            self.status.object = render_knob_error(" ".join(shown.values()))
        if found or step_ms is None or capacity is None:
            return None
        return TraceTimedRun(entries, self.engines, capacity, block_size, step_ms)

    def set_running(self, running: bool, can_run: bool = True) -> None:
        super().set_running(running, can_run)
        self.timed_button.disabled = running

    @logged
    def _on_timed(self, *_: Any) -> None:
        pn.state.execute(self.start_timed)

    async def start_timed(self) -> None:
        """Replay the slice with time on the engines asked for (stopping a run in
        progress), with progress, then draw each engine's run on the charts."""
        run = await self.checked_timed_run()
        if run is None:
            return
        if self._run is not None:
            self._run.stop()
        self._run = run
        with pn.io.hold():
            self._show_timed([])
            self.status.object = render_timed_progress(0.0)
            self.set_running(True)

        def show_progress(share: float) -> None:
            if run is self._run:
                update_changed(self.status, object=render_timed_progress(share))

        runs = await run.play(show_progress)
        if run is not self._run:
            return
        self._run = None
        with pn.io.hold():
            self.set_running(False)
            if runs is None:
                self.status.object = "Stopped: the replay with time did not finish."
                return
            self.timed = runs
            self._show_timed(runs)
            self.status.object = render_timed_done(len(run.entries), runs)

    def _show_timed(self, runs: Sequence[TimedTraceRun]) -> None:
        """Each engine's run with time on the charts (none: empty charts) and its numbers."""
        by_engine = {run.engine: run for run in runs}
        for source, (engine, name) in zip(self.timed_sources, SOURCE_KEYS, strict=True):
            shown = by_engine.get(engine) if name == "run" else None
            source.data = chart_data(shown, CHART_COLUMNS)
        engines = [run.engine for run in runs] or list(self.engines)
        self.timed_charts.show_legends([TIMED_LABEL], list(runs) or None, engines)
        self.timed_numbers.object = render_timed_result(runs) if runs else ""

    async def start(self) -> None:
        """Play the knobs' curve (stopping one in progress), drawing each point as it comes."""
        run = await self.checked_run()
        if run is None:
            return
        if self._run is not None:
            self._run.stop()
        self._run = run
        started = time.perf_counter()
        total = len(run.capacities) * len(run.engines)
        with pn.io.hold():
            for source in self.sources.values():
                source.data = curve_columns([])
            self.paper.data = {"x": [], "y": [], "label": []}
            self.gap.object = ""
            self._x_range.update(
                start=run.capacities[0] / 1.5,
                end=max(run.capacities[-1], PAPER_LOCAL_CACHE_TOKENS) * 1.5,
            )
            self.status.object = render_curve_progress(0.0, 0, total)
            self.set_running(True)

        def show_point(engine: str, points: list[InOrderReplay]) -> None:
            if run is not self._run:
                return
            with pn.io.hold():
                self.sources[engine].data = curve_columns(points)
                done = sum(len(p) for p in run.points.values())
                self.status.object = render_curve_progress(run.progress, done, total)

        curve = await run.play(show_point)
        if run is not self._run:
            return
        self._run = None
        with pn.io.hold():
            self.set_running(False)
            if curve is None:
                self.status.object = "Stopped: the chart shows the points played so far."
                return
            self.curve = curve
            ratio = curve.paper_ratio
            if ratio is not None:
                self.paper.data = {
                    "x": [float(curve.capacities[-1])],
                    "y": [ratio],
                    "label": [f"paper: {ratio:.0%}"],
                }
            self.gap.object = render_gap_sentences(curve.gaps, curve.whole_trace, curve.requests)
            self.status.object = render_curve_done(
                curve.requests, time.perf_counter() - started, len(curve.points)
            )
