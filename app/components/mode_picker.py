"""The mode picker (default, preempt, keep), in the browser.

Picking a mode asks the player (player.js) for that mode's timeline at the same
step; the picker shows the modes of the scenario the player announces (its
timelines' keys), that position's checked. It works on
the static site before Python is ready, like the step controls.
"""

from __future__ import annotations

import param

from app.components.esm import FileComponent

LABEL = "Mode"


class ModePicker(FileComponent):
    label = param.String(default=LABEL, constant=True, doc="The group's caption")

    _esm = "mode_picker.js"
