"""The learner's controls: scenario, mode, and the step controls (views/player_bar.py).

Scenario and mode are Panel widgets (a new timeline is built in Python); the
steps are moved in the browser by the PlayerBar, whose `step` comes back here
into the state, and the state's jumps (deep links, a new timeline) go to it.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param

from app import timelines
from app.errors import logged
from app.state import SimulatorState
from app.theme import CSS
from app.views.player_bar import PlayerBar
from app.views.step_deck import timeline_key


def scenario_options() -> dict[str, str]:
    """Title -> name, in the list's order: the learner picks by what a scenario shows."""
    return {timelines.scenario(n).title: n for n in timelines.names()}


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
        self.player = PlayerBar(
            sizing_mode="stretch_width", min_width=280, stylesheets=[CSS], margin=(2, 4)
        )
        self._timeline: object = None  # the timeline the player was last given

        self.scenario.param.watch(
            action(lambda: setattr(state, "scenario", self.scenario.value)), "value"
        )
        self.mode.param.watch(action(lambda: setattr(state, "mode", self.mode.value)), "value")
        self.player.param.watch(self._from_player, "step")
        state.param.watch(self._sync, ["timeline", "step", "scenario", "mode"])
        self._sync()

        modes_row = pn.Row(self._mode_label, self.mode, visible=len(state.modes) > 1, margin=0)
        self._modes_row = modes_row
        self._layout = pn.Column(
            pn.FlexBox(self.scenario, modes_row, align_items="center", flex_wrap="wrap", margin=0),
            self.player,
            sizing_mode="stretch_width",
            styles={
                "background": "#f5f7fa",
                "border": "1px solid #d9dee5",
                "border-radius": "8px",
                "padding": "2px 4px",
            },
            margin=(6, 0),
        )

    @logged
    def _from_player(self, *_: object) -> None:
        """The browser moved the step: the state follows (its bounds hold it in range)."""
        last = self.state.last_step
        step = max(0, min(self.player.step, last))
        if step != self.state.step:
            self.state.step = step

    @logged
    def _sync(self, *_: object) -> None:
        """Show the state in the widgets (their events then find nothing to change)."""
        state = self.state
        self.scenario.value = state.scenario
        self.mode.param.update(options=list(state.modes), value=state.mode)
        if hasattr(self, "_modes_row"):
            self._modes_row.visible = len(state.modes) > 1
        assert state.timeline is not None
        if state.timeline is not self._timeline:
            self._timeline = state.timeline
            self.player.param.update(
                key=timeline_key(state.timeline), last=state.last_step, step=state.step
            )
        elif self.player.step != state.step:
            self.player.step = state.step  # a jump from Python (the browser moves itself)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
