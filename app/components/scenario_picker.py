"""The scenario picker: a native select, by title.

It shows the scenario of the player's position (a playground among them, by the title
the player's bundle gives it). With Python live, a pick goes to Python (a message: the
open scenario is the player's, not a parameter), which builds the scenario's timelines.
Before Python is ready (the static site's early page, app/page/early_page.js) a pick
opens the scenario's address instead: every scenario has an early page of its own
(build.py), so the new page steps at once while Python starts again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import param

from app.components.esm import FileComponent

LABEL = "Scenario"


class ScenarioPicker(FileComponent):
    options = param.List(default=[], doc="[name, title] of every built-in scenario, in order")

    label = param.String(default=LABEL, constant=True, doc="The picker's caption")

    _esm = "scenario_picker.js"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.on_pick: Callable[[str], None] = lambda _name: None

    def pick(self, name: str) -> None:
        """The learner picked ``name`` (as the browser's pick does)."""
        self.on_pick(name)

    def _handle_msg(self, data: Any) -> None:
        if isinstance(data, dict) and isinstance(data.get("pick"), str):
            self.pick(data["pick"])
