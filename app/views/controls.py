"""The learner's controls: mode, step buttons, Play/Pause, speed, scrubber, counter.

Widgets are built once; state changes update their values, and widget events
call SimulatorState's actions inside one `hold`, so the browser gets one patch.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param

from app import timelines
from app.errors import logged
from app.state import SPEEDS, SimulatorState
from app.theme import CSS
from app.views.html_pane import StepHTML

SPEED_LABELS = {f"{s:g} step{'s' if s != 1 else ''}/s": s for s in SPEEDS}


def scenario_options() -> dict[str, str]:
    """Title -> name, in the list's order: the learner picks by what a scenario shows."""
    return {timelines.scenario(n).title: n for n in timelines.names()}


def counter_html(step: int, last: int) -> str:
    return (
        f'<div class="counter" data-testid="step-counter" data-step="{step}" '
        f'aria-live="polite">Step {step} / {last}</div>'
    )


def action(fn: Callable[[], None]) -> Callable[[object], None]:
    """A widget callback that runs one state action as one browser update."""

    @logged
    def callback(_event: object = None) -> None:
        with pn.io.hold():
            fn()

    return callback


class Controls(pn.viewable.Viewer):
    state = param.ClassSelector(class_=SimulatorState)

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        state = self.state
        self.scenario = pn.widgets.Select(
            label="Scenario",
            options=scenario_options(),
            value=state.scenario,
            width=300,
            visible=len(timelines.names()) > 1,
        )
        self.mode = pn.widgets.RadioBoxGroup(
            label="Mode",
            options=list(state.modes),
            value=state.mode,
            inline=True,
            margin=(8, 10, 4, 10),
        )
        self._mode_label = pn.pane.HTML(
            '<span style="font-size:12px;font-weight:600;color:#5f6b7a">MODE</span>',
            stylesheets=[CSS],
            margin=(10, 0, 0, 10),
        )
        button = {"margin": (4, 3), "height": 34}
        self.restart = pn.widgets.Button(label="Restart", **button)
        self.back = pn.widgets.Button(label="Step back", **button)
        self.forward = pn.widgets.Button(label="Step forward", color="primary", **button)
        self.play = pn.widgets.Button(label="Play", color="success", width=78, **button)
        self.speed = pn.widgets.Select(
            label="Speed",
            options=SPEED_LABELS,
            value=state.speed,
            width=110,
            margin=(4, 6),
            height=34,
        )
        self.slider = pn.widgets.IntSlider(
            label="Step",
            start=0,
            end=state.last_step,
            value=state.step,
            sizing_mode="stretch_width",
            min_width=160,
            margin=(2, 12, 6, 12),
        )
        self.counter = StepHTML(
            counter_html(state.step, state.last_step),
            stylesheets=[CSS],
            margin=(12, 8, 0, 4),
        )

        self.scenario.param.watch(
            action(lambda: setattr(state, "scenario", self.scenario.value)), "value"
        )
        self.mode.param.watch(action(lambda: setattr(state, "mode", self.mode.value)), "value")
        self.restart.on_click(action(state.restart))
        self.back.on_click(action(state.step_back))
        self.forward.on_click(action(state.step_forward))
        self.play.on_click(action(state.toggle_play))
        self.speed.param.watch(action(lambda: setattr(state, "speed", self.speed.value)), "value")
        self.slider.param.watch(action(self._scrub), "value")
        state.param.watch(self._sync, ["timeline", "step", "playing", "speed", "scenario", "mode"])
        self._sync()

        modes_row = pn.Row(self._mode_label, self.mode, visible=len(state.modes) > 1, margin=0)
        self._modes_row = modes_row
        self._layout = pn.FlexBox(
            self.scenario,
            modes_row,
            pn.FlexBox(
                self.restart,
                self.back,
                self.forward,
                self.play,
                self.speed,
                margin=0,
                flex_wrap="wrap",
                align_items="center",
            ),
            pn.Row(
                self.slider,
                self.counter,
                sizing_mode="stretch_width",
                min_width=240,
                margin=0,
                styles={"flex": "1 1 300px"},
            ),
            align_items="center",
            flex_wrap="wrap",
            sizing_mode="stretch_width",
            styles={
                "background": "#f5f7fa",
                "border": "1px solid #d9dee5",
                "border-radius": "8px",
                "padding": "2px 4px",
            },
            margin=(6, 0),
        )

    def _scrub(self) -> None:
        if self.slider.value != self.state.step:
            self.state.param.update(step=self.slider.value, playing=False)

    @logged
    def _sync(self, *_: object) -> None:
        """Show the state in the widgets (their events then find nothing to change)."""
        state = self.state
        last = state.last_step
        self.scenario.value = state.scenario
        self.mode.param.update(options=list(state.modes), value=state.mode)
        if hasattr(self, "_modes_row"):
            self._modes_row.visible = len(state.modes) > 1
        self.slider.param.update(end=max(last, 1), value=state.step, disabled=last == 0)
        self.counter.object = counter_html(state.step, last)
        self.back.disabled = state.step == 0
        self.forward.disabled = state.step >= last
        self.play.param.update(
            label="Pause" if state.playing else "Play",
            color="warning" if state.playing else "success",
        )
        self.speed.value = state.speed

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
