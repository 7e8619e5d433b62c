"""The mode picker (default, preempt, keep), in the browser.

Picking a mode asks the player (player.js) for that mode's timeline at the same
step; the picker shows the mode of the position the player announces. It works on
the static site before Python is ready, like the step controls.
"""

from __future__ import annotations

import param

from app.components.step_deck import LeanComponent

LABEL = "Mode"


class ModePicker(LeanComponent):
    scenario = param.String(default="", doc="The open scenario")
    modes = param.List(default=[], item_type=str, doc="Its modes, in order")

    label = param.String(default=LABEL, constant=True, doc="The group's caption")

    _esm = "mode_picker.js"
