"""The learner's controls: scenario, mode, and the step controls (views/player_bar.py).

A scenario is picked in the browser and built in Python (scenario_picker.py).
Modes and steps move in the browser (mode_picker.py, player_bar.py);
the bar's position (`key`, `step`) comes back here into the state, and the
state's own moves (deep links, a new scenario) go to the bar and the picker.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param

from app import timelines
from app.components.mode_picker import ModePicker
from app.components.player_bar import PlayerBar
from app.components.scenario_picker import ScenarioPicker
from app.errors import logged
from app.state import SimulatorState
from app.theme import CSS
from app.views.base import COMPACT_CSS


def scenario_options() -> list[list[str]]:
    """[name, title], in the list's order: the learner picks by what a scenario shows."""
    return [[n, timelines.scenario(n).title] for n in timelines.names()]


def action(fn: Callable[[], None]) -> Callable[[object], None]:
    """A widget callback that runs one state action as one browser update."""

    @logged
    def callback(_event: object = None) -> None:
        with pn.io.hold():
            fn()

    return callback


class Controls(pn.viewable.Viewer):
    state = param.ClassSelector(class_=SimulatorState)
    compact = param.Boolean(default=False, doc="The embed: the picker's caption beside it")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        state = self.state
        self.scenario = ScenarioPicker(
            options=scenario_options(),
            value=state.scenario,
            width=300,
            stylesheets=[CSS, *([COMPACT_CSS] if self.compact else [])],
            margin=(4, 10),
            visible=len(timelines.names()) > 1,
        )
        self.mode = ModePicker(stylesheets=[CSS], margin=(8, 10, 4, 10))
        self.player = PlayerBar(
            sizing_mode="stretch_width", min_width=280, stylesheets=[CSS], margin=(2, 4)
        )
        self._following = False  # the state is following the browser: nothing to send back
        # The scenario and mode the state last left: a mode picked there while Python was
        # opening the next one (a fork, an edit, an address) is meant for the next one.
        self._left: tuple[str, str] | None = None

        self.scenario.param.watch(
            action(lambda: setattr(state, "scenario", self.scenario.value)), "value"
        )
        self.player.param.watch(self._from_player, ["key", "step"])
        state.param.watch(self._leaving, ["scenario", "mode"])
        state.param.watch(self._sync, ["timeline", "step", "scenario", "mode"])
        self._sync()

        self._layout = pn.Column(
            pn.FlexBox(self.scenario, self.mode, align_items="center", flex_wrap="wrap", margin=0),
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

    def _leaving(self, *events: param.parameterized.Event) -> None:
        old = {event.name: event.old for event in events}
        if "scenario" in old:
            self._left = (str(old["scenario"]), str(old.get("mode", self.state.mode)))

    @logged
    def _from_player(self, *_: object) -> None:
        """The browser moved (a step, or a mode of this scenario): the state follows."""
        state = self.state
        scenario, mode = timelines.split_key(self.player.key)
        left = self._left
        if left and scenario == left[0] and mode != left[1] and mode in state.modes:
            # A mode picked on the scenario just left, before the browser had the next one:
            # the learner meant it for what opened, from its first step (as a mode picked).
            self._left = None
            with pn.io.hold():
                state.open(state.scenario, mode, 0)  # the bar and the picker follow (_sync)
            return
        if scenario != state.scenario or mode not in state.modes:
            self._sync()  # stale (another scenario) or forged: the bar goes back to the state
            return
        step = max(0, min(self.player.step, state.last_of(mode)))
        self._following = True
        try:
            with pn.io.hold():
                state.open(scenario, mode, step)
        finally:
            self._following = False
        if self.player.step != step:
            self.player.step = step  # out of range: the bar goes back in

    @logged
    def _sync(self, *_: object) -> None:
        """Show the state in the controls (their events then find nothing to change)."""
        state = self.state
        self.scenario.value = state.scenario
        self.mode.param.update(
            scenario=state.scenario,
            modes=list(state.modes),
            mode=state.mode,
            visible=len(state.modes) > 1,
        )
        if self._following or state.timeline is None:
            return  # the bar is where the state is going
        self.player.param.update(key=state.key, lasts=state.lasts, step=state.step)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
