"""The workload lab's "Real traces" page (`?lab=real-traces`): a trace, a slice, the block size and
the engine as knobs; the hit-rate curve against capacity drawn point by point, and the gap to the
paper; the slice replayed with time on the presets' charts."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

import panel as pn

from app.components.at_once import FloatInput, IntInput, Select
from app.data.lab import DEFAULT_ENGINE
from app.data.lab_presets import TRACES_PRESET
from app.data.trace_lab import (
    DEFAULT_TIMED_CAPACITY,
    DEFAULT_TRACE_REQUESTS,
    TIMED_CELLS,
    TraceCurveRun,
    TraceTimedRun,
    available_traces,
    check_trace_knobs,
    load_trace,
    timed_problems,
)
from app.host.errors import logged
from app.host.runtime import in_pyodide
from app.render.lab import (
    TRACES,
    engine_steps,
    lab_text,
    render_gap_sentences,
    render_knob_error,
    render_progress,
    render_timed_result,
)
from app.style.theme import FOCUS_RING
from app.views.lab_charts import SOURCE_KEYS, CurveChart, RunCharts
from app.views.lab_controls import WRAPPING, LabGroup, html_pane, knob_widgets, update_changed
from engine.lab.traces.replay import InOrderReplay, trace_name_of
from engine.lab.traces.request_trace import (
    TRACE_BLOCK_TOKENS,
    TraceEntry,
    TraceError,
    parse_trace_bytes,
)
from engine.lab.traces.timed import CANNOT_SHOW, DEFAULT_STEP_MS, TimedTraceRun

YOUR_FILE = "your file"
# The replay with time's charts (indices into CHARTS): the hit rate, the pool, preemptions
# and the survival fraction, where time shows (concurrency, eviction, preemption).
TIMED_CHARTS = (0, 2, 4, 5)
# What the replay with time's runs are called in the charts' legends.
TIMED_LABEL = "with time"
# The knobs the curve depends on, and all of them (the replay with time's), in the order
# the stale note names them.
CURVE_KNOBS = ("trace", "requests", "block_size", "engine")
ALL_KNOBS = (*CURVE_KNOBS, "step_ms", "capacity")


def timed_progress(share: float) -> str:
    return render_progress(share, "traces", "timed_progress")


class TraceLabView(LabGroup):
    """The "Real traces" group: a trace, a slice, the block size and the engine as knobs."""

    cell_prefix = "traces"

    def __init__(
        self, notices: Sequence[str] = (), engine: str = DEFAULT_ENGINE, **params: Any
    ) -> None:
        knobs = ("requests", "block_size", "upload", "step_ms", "capacity")
        super().__init__(TRACES_PRESET, engine, notices, knobs, **params)
        shipped = available_traces()
        trace = shipped[0] if shipped else YOUR_FILE
        self.knobs = knob_widgets(
            (
                ("trace", partial(Select, options=[*shipped, YOUR_FILE]), "Trace", trace, 200),
                ("requests", IntInput, "Requests (first N; 0: all)", DEFAULT_TRACE_REQUESTS, 200),
                ("block_size", IntInput, "block_size (vLLM, tokens)", TRACE_BLOCK_TOKENS, 200),
                ("step_ms", FloatInput, "Step time (ms, with time)", DEFAULT_STEP_MS, 200),
                ("capacity", IntInput, "Capacity (tokens, with time)", DEFAULT_TIMED_CAPACITY, 200),
            )
        )
        self.knobs["upload"] = pn.widgets.FileInput(
            accept=".jsonl,.json,.gz", width=240, stylesheets=[FOCUS_RING]
        )
        self.timed_button = pn.widgets.Button(
            label="Run with time", width=130, stylesheets=[FOCUS_RING]
        )
        self._uploaded: list[TraceEntry] | None = None
        # The knobs the results shown are for (the curve's, the replay with time's; None:
        # none shown); a knob changed since marks them stale at once.
        self._curve_for: dict[str, Any] | None = None
        self._timed_for: dict[str, Any] | None = None
        self.curve_chart = CurveChart()
        self.gap = html_pane()
        # The replay with time: the workload lab's charts of a run (the overlay's sources
        # left empty) and its numbers.
        self.timed_charts = RunCharts(TIMED_CHARTS, lambda e, n: f"timed-source-{e}-{n}")
        self.timed_charts.show_legends([TIMED_LABEL], None, self.engines)
        self.timed_intro = html_pane(lab_text("traces", "timed_intro", cannot_show=CANNOT_SHOW))
        self.timed_numbers = html_pane()
        # The last replay with time's runs (it and the curve play one at a time).
        self.timed: list[TimedTraceRun] | None = None
        self.timed_button.on_click(self._on_timed)
        self.knobs["upload"].param.watch(self._on_upload, "value")
        for name in ALL_KNOBS:
            self.widget(name).param.watch(lambda _: self.show_staleness(), "value")
        # Hidden until a replay with time has runs to draw (no empty charts before).
        self.timed_box = pn.FlexBox(*self.timed_charts.cells(), visible=False, **WRAPPING)
        self.roots = self._build()

    def _build(self) -> tuple[pn.Column, ...]:
        site = lab_text("traces", "site_slice", requests=DEFAULT_TRACE_REQUESTS)
        controls = self.controls_root(
            lab_text("traces", "intro", site=site if in_pyodide() else ""),
            self.knob_row("preset", *CURVE_KNOBS, "upload", "step_ms", "capacity"),
            self.buttons_row(self.timed_button),
        )
        timed = pn.Column(
            self.timed_intro,
            self.timed_box,
            self.timed_numbers,
            sizing_mode="stretch_width",
            css_classes=["lab-timed"],
        )
        curve = (self.curve_chart.title, self.curve_chart.pane)
        results = (self.stale_note, *curve, self.gap, timed)
        return controls, self.results_root("lab-traces", *results)

    def knob_values(self) -> dict[str, Any]:
        """The knobs as the stale note names them (the learner's file by its name)."""
        values = {name: self.widget(name).value for name in ALL_KNOBS}
        if values["trace"] == YOUR_FILE:
            values["trace"] = self.knobs["upload"].filename or YOUR_FILE
        return values

    def show_staleness(self, playing: bool = False) -> None:
        """Mark the results stale the moment a knob differs from theirs, else unmark them."""
        now = self.knob_values()
        shown = ((self._curve_for, CURVE_KNOBS), (self._timed_for, tuple(now)))
        changes = [
            f"{knob} = {asked[knob]}"
            for asked, knobs in shown
            if asked
            for knob in knobs
            if asked[knob] != now[knob]
        ]
        self.show_stale(list(dict.fromkeys(changes)), playing)

    @logged
    def _on_upload(self, event: Any) -> None:
        """A learner's own trace: read by the engine; a bad line's message beside it."""
        if not event.new:
            return
        try:
            self._uploaded = parse_trace_bytes(event.new)
        except TraceError as error:
            self._uploaded = None
            self.show_knob_error("upload", str(error))
            return
        self.show_knob_error("upload", "")
        self.knobs["trace"].value = YOUR_FILE

    async def _entries(self) -> tuple[str, list[TraceEntry]] | None:
        """The trace's name and all its requests; None (and a message) when there is none."""
        name = self.knobs["trace"].value
        if name == YOUR_FILE:
            if self._uploaded is None:
                self.show_knob_error("upload", "Choose a trace file (JSON lines, or gzipped)")
                return None
            filename = self.knobs["upload"].filename or "your_trace.jsonl"
            return trace_name_of(filename), self._uploaded
        try:
            return name, list(await load_trace(name))
        except TraceError as error:
            self.status.object = render_knob_error(str(error))
            return None

    async def checked_slice(self) -> tuple[str, list[TraceEntry], bool, int] | None:
        """The trace's name, slice, whether it is whole, and block size; or None (and why)."""
        chosen = await self._entries()
        if chosen is None:
            return None
        name, entries = chosen
        requests, block_size = self.knobs["requests"].value, self.knobs["block_size"].value
        found = check_trace_knobs(requests, block_size, len(entries))
        for knob in ("requests", "block_size"):
            self.show_knob_error(knob, found.get(knob, ""))
        if found or block_size is None:
            return None
        count = requests or len(entries)
        return name, entries[:count], count >= len(entries), block_size

    async def checked_timed_run(self) -> TraceTimedRun | None:
        """The replay with time the knobs ask for; or None (and why, beside the knobs)."""
        chosen = await self.checked_slice()
        if chosen is None:
            return None
        _, entries, _, block_size = chosen
        step_ms, capacity = self.knobs["step_ms"].value, self.knobs["capacity"].value
        found = timed_problems(entries, self.engines, capacity, block_size, step_ms)
        shown = {TIMED_CELLS.get(knob, knob): message for knob, message in found.items()}
        for name in self.knob_errors:
            if name != "upload":
                self.show_knob_error(name, shown.pop(name, ""))
        if shown:
            self.status.object = render_knob_error(" ".join(shown.values()))
        if found or step_ms is None or capacity is None:
            return None
        return TraceTimedRun(entries, self.engines, capacity, block_size, step_ms)

    def show_running(self, running: bool) -> None:
        super().show_running(running)
        self.timed_button.disabled = running

    @logged
    def _on_timed(self, *_: Any) -> None:
        pn.state.execute(self.start_timed)

    async def start_timed(self) -> None:
        """Replay the slice with time on the engines asked for, then draw the runs."""
        run = await self.checked_timed_run()
        if run is None:
            return
        asked = self.knob_values()
        with pn.io.hold():
            self._timed_for = None
            self._show_timed([])
            self.status.object = timed_progress(0.0)
            self.show_staleness(playing=True)

        def show(runs: list[TimedTraceRun]) -> None:
            self.timed = runs
            self._timed_for = asked
            self._show_timed(runs)
            steps, requests = engine_steps(runs), len(run.entries)
            self.status.object = lab_text("traces", "timed_done", requests=requests, steps=steps)
            self.show_staleness()

        await self.play_run(run, run.play, timed_progress, TRACES["timed_stopped"], show)

    def _show_timed(self, runs: Sequence[TimedTraceRun]) -> None:
        """Each engine's run with time on the charts (none: empty charts) and its numbers."""
        by_engine = {run.engine: run for run in runs}
        block_size = self._timed_for["block_size"] if self._timed_for else None
        for engine, name in SOURCE_KEYS:
            shown = by_engine.get(engine) if name == "run" else None
            self.timed_charts.chart((engine, name), shown, block_size)
        update_changed(self.timed_box, visible=bool(runs))
        engines = [run.engine for run in runs] or list(self.engines)
        self.timed_charts.show_legends([TIMED_LABEL], list(runs) or None, engines)
        self.timed_numbers.object = render_timed_result(runs) if runs else ""

    async def start(self) -> None:
        """Play the knobs' curve (stopping one in progress), drawing each point as it comes."""
        chosen = await self.checked_slice()
        if chosen is None:
            return
        run = TraceCurveRun(*chosen, self.engines)
        started = time.perf_counter()
        total = len(run.capacities) * len(run.engines)
        asked = self.knob_values()

        def progress(share: float) -> str:
            done = sum(len(p) for p in run.points.values())
            return render_progress(share, "traces", "curve_progress", points=done, total=total)

        with pn.io.hold():
            self.curve_chart.clear(run.capacities)
            self.gap.object = ""
            self.status.object = progress(0.0)
            self._curve_for = None  # the curve drawn from now on is the knobs'
            if self._timed_for is not None and any(
                self._timed_for[knob] != asked[knob] for knob in CURVE_KNOBS
            ):  # a replay with time of another slice or engine is not left beside it
                self._timed_for, self.timed = None, None
                self._show_timed([])
            self.show_staleness(playing=True)

        def play(on_progress: Callable[[float], None]) -> Awaitable[TraceCurveRun | None]:
            def show_point(engine: str, points: list[InOrderReplay]) -> None:
                if run is self._run:
                    with pn.io.hold():
                        self.curve_chart.show_points(engine, points)
                        on_progress(run.progress)

            return run.play(show_point)

        def show(curve: TraceCurveRun) -> None:
            self._curve_for = asked
            self.show_staleness()
            self.curve_chart.show_paper_ratio(curve)
            requests = len(curve.entries)
            self.gap.object = render_gap_sentences(curve.gaps, curve.whole_trace, requests)
            took = time.perf_counter() - started
            done = "curve_done" if len(curve.points) == 1 else "curves_done"
            self.status.object = lab_text("traces", done, requests=requests, seconds=took)

        await self.play_run(run, play, progress, TRACES["curve_stopped"], show)
