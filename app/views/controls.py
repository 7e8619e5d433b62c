"""The learner's controls: the scenario picker, the engine and mode pickers and the
player (the step bar and the owner of the position, app/components/player.py).

A scenario is picked in the browser and built in Python (scenario_picker.py). Modes and
steps move in the browser (the player); its position (`at`) comes back here into the
state, and nothing goes back. Python gives the player a new bundle of timelines, with
the position to open at, only when the state opens another scenario (a pick, an edit,
an address) or an address the player did not hold.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param

from app.components.engine_picker import EnginePicker
from app.components.mode_picker import ModePicker
from app.components.player import StepPlayer
from app.components.scenario_picker import ScenarioPicker
from app.data import timelines
from app.host.errors import logged
from app.style.theme import CSS
from app.views.base import COMPACT_CSS, sender_of
from app.views.sender import Sender
from app.views.state import SimulatorState


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


def action_on(fn: Callable[[str], None]) -> Callable[[str], None]:
    """A browser message's callback that runs one state action as one browser update."""

    @logged
    def callback(value: str) -> None:
        with pn.io.hold():
            fn(value)

    return callback


class Controls(pn.viewable.Viewer):
    state = param.ClassSelector(class_=SimulatorState)
    sender = param.ClassSelector(class_=Sender, doc="The App's one sender: into the player")
    compact = param.Boolean(default=False, doc="The embed: the picker's caption beside it")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        state = self.state
        self.scenario = ScenarioPicker(
            options=scenario_options(),
            width=300,
            stylesheets=[CSS, *([COMPACT_CSS] if self.compact else [])],
            margin=(4, 10),
            visible=len(timelines.names()) > 1,
        )
        self.engine = EnginePicker(stylesheets=[CSS], margin=(8, 10, 4, 10))
        self.mode = ModePicker(stylesheets=[CSS], margin=(8, 10, 4, 10))
        self.player = StepPlayer(
            sizing_mode="stretch_width", min_width=280, stylesheets=[CSS], margin=(2, 4)
        )
        sender_of(self).connect(self.player)
        self.scenario.on_pick = action_on(lambda name: setattr(state, "scenario", name))
        self.player.param.watch(self._from_player, "at")
        state.param.watch(self._show_modes, ["scenario"])
        self._show_modes()

        self._layout = pn.Column(
            pn.FlexBox(
                self.scenario,
                self.engine,
                self.mode,
                align_items="center",
                flex_wrap="wrap",
                margin=0,
            ),
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
        """The browser moved (a step, or a mode of this scenario): the state follows. A
        position of another scenario is stale (the player gets the new one's bundle)."""
        state = self.state
        try:
            key, step = self.player.at
            scenario, mode = timelines.split_key(str(key))
            step = int(step)
        except (TypeError, ValueError):
            return  # malformed
        if scenario != state.scenario or mode not in state.modes:
            return
        with pn.io.hold():
            state.open(scenario, mode, max(0, min(step, state.last_of(mode))))
        self.sender.heard = [state.key, state.step]

    @logged
    def _show_modes(self, *_: object) -> None:
        modes = self.state.modes
        self.mode.visible = len(modes) > 1

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
