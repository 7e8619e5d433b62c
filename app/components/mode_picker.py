"""The mode picker (default, preempt, keep), in the browser.

Every mode of the open scenario is already in the browser (step_deck.py), so
picking one needs no Python: the picker announces the mode's timeline at step 0
on the step channel, every view swaps its page, and the step controls
(player_bar.py) take the new timeline and tell Python. It shows the mode the
channel names, or, until the channel names one of this scenario, its `mode`.
It works on the static site before Python is ready, like the step controls.
"""

from __future__ import annotations

import param

from app.components.step_deck import LeanComponent

LABEL = "Mode"


class ModePicker(LeanComponent):
    scenario = param.String(default="", doc="The open scenario")
    modes = param.List(default=[], item_type=str, doc="Its modes, in order")
    mode = param.String(default="", doc="The mode Python has open")

    label = param.String(default=LABEL, constant=True, doc="The group's caption")

    _esm = "mode_picker.js"
