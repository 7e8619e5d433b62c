"""The code panel in the browser: every step's code sent once per scenario.

A function's highlighted source is tens of kilobytes of HTML and the same
function runs at many steps (and in every mode), so the panel receives, for
the scenario's timelines, the distinct frames (heading, legend) and bodies (a
function's lines, unmarked) and a plan per timeline: per step, which frame and
body show the step's focus function, which lines ran, which ran last, and the
names of every function that ran. The position comes from the player
(player.py). The browser marks the lines and scrolls the code box
(not the page) so the last line that ran sits in its middle.

The function picker lives here too: picking the focus shows the plan; picking
another function asks Python (`pick`), whose answer (`picked`) is shown while
the position and the pick still match.
"""

from __future__ import annotations

from typing import Any

import param

from app.components.json_text import ParsedJson
from app.components.step_deck import LeanComponent

PICKER_LABEL = "Functions that ran at this step (in the order entered)"


class CodePanel(LeanComponent):
    frames = param.List(
        default=[],
        item_type=str,
        doc="Distinct frames; SLOT (app/render/code_plan.py) marks the lines",
    )
    bodies = param.List(default=[], item_type=str, doc="Distinct bodies: a function's lines")
    # One JSON string, not a nested dict (json_text.py).
    plans_json = param.String(
        default="{}",
        doc="JSON: timeline key -> per step: a Plan (app/render/code_plan.py) by name, or null",
    )
    key = param.String(default="", doc="The timeline to show until the player names one held")
    step = param.Integer(default=0, doc="The step to show until the player names one held")
    pick = param.List(default=[], doc="From the browser: [key, step, index] of a picked function")
    picked = param.Dict(default={}, doc="The picked function's position, index, frame, body, marks")

    picker_label = param.String(default=PICKER_LABEL, constant=True, doc="The picker's caption")

    _esm = "code_panel.js"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._plans = ParsedJson()

    @property
    def plans(self) -> dict[str, list[dict[str, Any]]]:
        """``plans_json`` read back (the same JSON the browser parses)."""
        plans: dict[str, list[dict[str, Any]]] = self._plans.read(self.plans_json)
        return plans

    def holds_page(self, key: str, step: int) -> bool:
        """Whether the browser has this position's code (a step planned None is not sent
        yet: the shown step's comes first, the others a moment later)."""
        plan = self.plans.get(key, [])
        return 0 <= step < len(plan) and plan[step] is not None
