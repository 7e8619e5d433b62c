"""The scenario picker: a native select, by title.

With Python live, a pick goes to Python, which builds the scenario's timelines.
Before Python is ready (the static site's pre-rendered copy, early_steps.py) a
pick opens the scenario's address instead: every scenario has a pre-rendered copy
of its own (build.py), so the new page steps at once while Python starts again.
"""

from __future__ import annotations

import param

from app.components.step_deck import LeanComponent

LABEL = "Scenario"


class ScenarioPicker(LeanComponent):
    options = param.List(default=[], doc="[name, title] of every scenario, in order")
    value = param.String(default="", doc="The open scenario; set by the browser or by Python")

    label = param.String(default=LABEL, constant=True, doc="The picker's caption")

    _esm = "scenario_picker.js"
