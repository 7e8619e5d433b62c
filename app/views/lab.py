"""The workload lab page (`?lab=PRESET&engine=vllm|sglang|both`): a preset, its knobs and the
engines, a run of them played in slices, Bokeh charts (app/views/lab_charts.py) with the expected
outcome, the step view and the playground link; and ``open_lab``, which opens the page (or group)
the address asks for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import panel as pn
from bokeh.events import Event, Tap

from app.components import at_once
from app.data.lab import (
    DEFAULT_ENGINE,
    LabResult,
    LabRun,
    RunAhead,
    RunSteps,
    check_knobs,
    engine_choice,
    run_steps,
    start_side_runs,
)
from app.data.lab_presets import FLEET_PRESET, TRACES_PRESET, default_preset
from app.data.url import lab_run_playground_href
from app.host.errors import logged
from app.render.lab import (
    TEXTS,
    engine_steps,
    lab_text,
    render_open_in_playground,
    render_outcome,
    render_progress,
    render_step_view,
    step_hint,
)
from app.views.fleet_lab import FleetLabView
from app.views.lab_charts import CHARTS, HIT_RATE_CHART_HEIGHT, SOURCE_KEYS, RunCharts
from app.views.lab_controls import (
    WRAPPING,
    LabGroup,
    html_pane,
    lab_picker_options,
    lab_root,
    update_changed,
)
from app.views.trace_lab import TraceLabView
from engine.lab.play.scenario import MODES, ScenarioError
from engine.lab.workload.presets import load_preset, preset_names
from engine.lab.workload.run import WorkloadRun
from engine.lab.workload.workload import KNOB_TYPES, SALT_POLICIES, Workload

# knob -> its label beside the widget, and the salt's choices (content/labs.toml)
KNOB_LABELS: dict[str, str] = TEXTS["knob_labels"]
assert set(KNOB_LABELS) == set(KNOB_TYPES)
SALT_LABELS: dict[str, str] = TEXTS["salt_labels"]
assert set(SALT_LABELS.values()) == set(SALT_POLICIES)

# A run still going after this long shows its progress and turns Stop on (a shorter
# one could not be stopped in time anyway, and each update costs the page time).
LONG_RUN_S = 1.0
# A run still going after this long marks the results shown as stale (a shorter one
# shows its own before the mark could be read: marking it would only make them blink).
STALE_AFTER_S = 0.2
# A knob's cell: three side by side in the lab's left column on a wide screen, four
# at 800 px, two on a phone; wider cells share a row's spare room.
KNOB_CELL: dict[str, Any] = dict(
    min_width=168, max_width=260, sizing_mode="stretch_width", styles={"flex": "1 1 168px"}
)


def knob_widget(knob: str, value: Any) -> Any:
    fit = {"label": KNOB_LABELS[knob], "value": value, "sizing_mode": "stretch_width"}
    if knob == "salt":
        return at_once.Select(options=SALT_LABELS, **fit)
    if knob == "reset_mode":
        return at_once.Select(options=list(MODES), **fit)
    if KNOB_TYPES[knob] is bool:
        return at_once.Checkbox(**fit)
    return at_once.IntInput(**fit)


class LabView(LabGroup):
    """Picks a preset, knobs and the engines, runs them, draws the charts."""

    def __init__(
        self,
        preset_name: str,
        notices: Sequence[str] = (),
        engine: str = DEFAULT_ENGINE,
        **params: Any,
    ) -> None:
        super().__init__(preset_name, engine, notices, KNOB_TYPES, **params)
        self._preset = load_preset(preset_name)
        workload = self._preset.workload
        self.knobs = {knob: knob_widget(knob, value) for knob, value in workload.knobs().items()}
        self.overlay = at_once.Checkbox(label=self._overlay_label(), value=True)
        self.outcome = html_pane()
        # The sources' names: vLLM's as they always were.
        self.charts = RunCharts(
            range(len(CHARTS)),
            lambda engine, run: f"lab-source-{'' if engine == 'vllm' else 'sglang-'}{run}",
        )
        # The hit-rate chart gives its legend's line naming the runs the room it takes, so
        # that the chart and its legend stay on the first screen (lab_page.css).
        self.charts.figures[0].height = HIT_RATE_CHART_HEIGHT
        labels = [self._preset.label]
        if self.overlay.value and self._preset.compare:
            labels.append(self._preset.compare_label)
        self.charts.show_legends(labels, None, self.engines)
        self.hint = html_pane()
        self.step_view = html_pane(visible=False)
        self._steps: RunSteps | None = None
        self.result: LabResult | None = None
        self._ahead: RunAhead | None = None
        self._loading_preset = False

        for widget in (self.engine, *self.knobs.values(), self.overlay):
            widget.param.watch(self._on_knob, "value")
        for fig in self.charts.figures:
            fig.on_event(Tap, self._on_tap)
        self.roots = self._build()

    # -- layout ------------------------------------------------------------------
    def _build(self) -> tuple[pn.Column, ...]:
        """The page as three layout roots: the controls; the hit-rate chart with the outcome; the
        other charts. Bokeh lays out a whole root again when any part of it changes size: the
        knobs' messages and the outcome, which change with most knob changes, leave the six
        charts of the last root alone (docs/performance.md)."""
        # Rows that wrap: a phone is narrower than a preset and its overlay's label.
        controls = self.controls_root(
            lab_text("lab", "intro"),
            pn.FlexBox(self.preset_select, self.engine, self.overlay, **WRAPPING),
            self.knob_row(*self.knobs, **KNOB_CELL),
            self.buttons_row(),
        )
        first, *others = self.charts.cells(whole_first=True)
        outcome = (self.stale_note, first, self.outcome, self.hint)
        return (
            controls,
            lab_root("lab-outcome", *outcome, margin=(0, 16, 0, 16)),
            self.results_root("lab-charts", pn.FlexBox(*others, **WRAPPING), self.step_view),
        )

    def show_staleness(self, playing: bool = False) -> None:
        """Mark the results stale while not the knobs' (``playing``: a run of them plays)."""
        if self.result is not None:
            knobs, overlay = self.knob_values(), self.overlay.value
            changes = self.result.changes_from(self._preset, knobs, overlay, self.engines)
            self.show_stale(changes, playing)

    def _overlay_label(self) -> str:
        compare = self._preset.compare_label
        return f"Overlay: {compare}" if self._preset.compare else "Overlay (this preset has none)"

    # -- the learner's actions -----------------------------------------------------
    def knob_values(self) -> dict[str, Any]:
        return {knob: widget.value for knob, widget in self.knobs.items()}

    def checked_workload(self) -> Workload | None:
        """The knobs' workload; each bad knob's message is shown beside it."""
        workload, found = check_knobs(self.knob_values())
        for knob in self.knobs:
            self.show_knob_error(knob, found.get(knob, ""))
        update_changed(self.run_button, disabled=bool(found) or self.running)
        return None if found else workload

    def load_preset(self, name: str) -> bool:
        if name not in preset_names():
            return False
        self._preset = load_preset(name)
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
        return True

    @logged
    def _on_knob(self, *_: Any) -> None:
        if self._loading_preset:
            return
        if self.checked_workload() is not None:
            pn.state.execute(self.start)
        else:
            self.show_staleness(playing=False)

    async def start(self) -> None:
        """Run the knobs' workload on the engines asked for (stopping any run), then show it."""
        workload = self.checked_workload()
        if workload is None:
            return
        if self._ahead is not None:
            self._ahead.stop()
        engines = self.engines
        run = LabRun(self._preset, workload, self.overlay.value, engines=engines)
        if run.runners:
            self.status.object = render_progress(0.0, "lab")

        def show_learners_run(learners: WorkloadRun) -> None:
            # The overlay's run plays next: the learner's own lines move first. (A
            # Bokeh model is changed inside a hold, which sends the change safely.)
            if run is self._run:
                with pn.io.hold():
                    self.charts.chart((learners.engine, "run"), learners)

        def show(result: LabResult) -> None:
            self.show_result(result)
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

        await self.play_run(
            run,
            lambda on_progress: run.play(on_progress, show_learners_run),
            lambda share: render_progress(share, "lab"),
            TEXTS["lab"]["stopped"],
            show,
            long_after=LONG_RUN_S,
            stale_after=STALE_AFTER_S,
        )

    def can_run(self) -> bool:
        return self.checked_workload() is not None

    def show_result(self, result: LabResult) -> None:
        """Put a finished run on the charts: new data, the same figures."""
        self.result = result
        with pn.io.hold():
            for engine, name in SOURCE_KEYS:
                self.charts.chart((engine, name), result.run_of(engine, compare=name == "compare"))
            runs = result.labelled_runs
            self.charts.show_legends(result.run_labels, [run for _, run in runs], result.engines)
            self.outcome.object = render_outcome(
                result.preset.title, result.expected_outcomes, runs
            )
            self.show_staleness(playing=False)
            # The step view and the playground step vLLM's engine (SGLang's run has no
            # timeline to step here).
            vllm = result.run_of("vllm")
            self._steps = None if vllm is None else run_steps(vllm.workload, vllm.num_steps)
            self._show_hint()
            update_changed(self.step_view, visible=False)
            update_changed(self.status, object=done_text(result))

    def _show_hint(self, step: int = 0, engine_step: int | None = None) -> None:
        """How to see a step, and the run's playground link at ``step`` (after ``engine_step``)."""
        assert self.result is not None
        run = self.result.run_of("vllm")
        if run is None:
            update_changed(self.hint, object=lab_text("lab", "no_steps_on_sglang"))
            return
        try:
            href = lab_run_playground_href(run.workload, run.num_steps, step)
            link = render_open_in_playground(href, engine_step)
        except ScenarioError as error:
            link = lab_text("lab", "no_playground", reason=str(error))
        hint = step_hint(self._steps is not None, vllms=self.result.names_engines)
        update_changed(self.hint, object=hint + link)

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


def done_text(result: LabResult) -> str:
    """The status line once the runs are shown: the requests, and each engine's steps (short)."""
    requests = result.run.workload.requests
    if len(result.engines) == 1:
        return lab_text("lab", "done_one", requests=requests, steps=result.run.num_steps)
    steps = engine_steps([run for run, _ in result.engine_runs])
    return lab_text("lab", "done", requests=requests, steps=steps)


def open_lab(preset_name: str, engine_word: str | None = None) -> LabGroup:
    """The lab at `?lab=PRESET&engine=WORD` (unknown: the default, with a notice)."""
    engine, engine_notice = engine_choice(engine_word)
    notices: list[str] = [engine_notice] if engine_notice else []
    pages = {TRACES_PRESET: TraceLabView, FLEET_PRESET: FleetLabView}
    view: LabGroup
    if preset_name in pages:
        view = pages[preset_name](notices, engine)
    else:
        chosen = preset_name or default_preset()
        if chosen not in preset_names():
            notices.append(
                f"Ignored lab={preset_name!r}: not one of {', '.join(lab_picker_options())}. "
                f"Showing {default_preset()!r}."
            )
            chosen = default_preset()
        view = LabView(chosen, notices, engine)
    pn.state.onload(view.start)
    return view
