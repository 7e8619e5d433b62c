"""The learner's controls, drawn by the stepping page (app/components/step_page.py): the
scenario picker, the engine and mode pickers and the player (the step bar and the owner
of the position, app/components/player.js).

Modes and steps move in the browser alone. A scenario is picked in the browser and built
in Python (a `pick` request): its document opens at its start (app/views/sender.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.data import timelines
from app.views.base import PagePart, page_of, sender_of


def scenario_options() -> list[list[str]]:
    """[name, title], in the list's order: the learner picks by what a scenario shows."""
    return [[name, title] for name, title in timelines.titles().items()]


class Controls(PagePart):
    """The page's controls as Python hears them: a scenario picked."""

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        page_of(self).answer("pick", self._pick)

    def _pick(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """A scenario picked: its document, opened at its start."""
        name = request.get("name")
        if name not in timelines.names():
            return {"error": f"No scenario is named {str(name)[:40]!r}"}
        with sender_of(self).opening():
            self.state.open(str(name), timelines.modes(str(name))[0], 0)
        return {}
