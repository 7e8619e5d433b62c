"""The learner's controls, drawn by the stepping page (app/components/step_page.py): the
scenario picker, the engine and mode pickers and the player (the step bar and the owner
of the position, app/components/player.js).

A scenario is picked in the browser and built in Python (a `pick` request). Modes and
steps move in the browser (the player); its position (`at`) comes back here into the
state, and nothing goes back. Python gives the player a new bundle of timelines, with
the position to open at, only when the state opens another scenario (a pick, an edit,
an address) or an address the player did not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import panel as pn
import param

from app.components.step_page import StepPage
from app.data import timelines
from app.host.errors import logged
from app.views.base import page_of, sender_of
from app.views.sender import Sender
from app.views.state import SimulatorState


def scenario_options() -> list[list[str]]:
    """[name, title], in the list's order: the learner picks by what a scenario shows."""
    return [[n, timelines.scenario(n).title] for n in timelines.names()]


class Controls(param.Parameterized):
    """The page's controls as Python hears them: the player's position (`at`) and a
    scenario picked, into the state."""

    state = param.ClassSelector(class_=SimulatorState)
    sender = param.ClassSelector(class_=Sender, doc="The App's one sender: into the player")
    page = param.ClassSelector(class_=StepPage, doc="The stepping page")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        page = page_of(self)
        sender_of(self).connect(page)
        page.answer("pick", self._pick)
        page.param.watch(self._from_player, "at")

    def _pick(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """A scenario picked: its bundle follows, opened at its start."""
        name = request.get("name")
        if name not in timelines.names():
            return {"error": f"No scenario is named {str(name)[:40]!r}"}
        self.state.scenario = name
        return {}

    @logged
    def _from_player(self, *_: object) -> None:
        """The browser moved (a step, or a mode of this scenario): the state follows. A
        position of another scenario is stale (the player gets the new one's bundle)."""
        state = self.state
        try:
            key, step = self.page.at
            scenario, mode = timelines.split_key(str(key))
            step = int(step)
        except (TypeError, ValueError):
            return  # malformed
        if scenario != state.scenario or mode not in state.modes:
            return
        with pn.io.hold():
            state.open(scenario, mode, max(0, min(step, state.last_of(mode))))
        self.sender.heard = [state.key, state.step]
