"""The mode picker (default, preempt, keep; SGLang's fcfs, lpm), in the browser.

Picking a mode asks the player (player.js) for that mode's timeline at the same
step; the picker shows the modes of the scenario the player announces (its
timelines' keys) on the engine of its timeline (the engine picker switches engines:
engine_picker.py), that position's checked. It works on the static site before
Python is ready, like the step controls.
"""

from __future__ import annotations

import param

from app.components.esm import FileComponent
from engine.lab.play.scenario import SGLANG_MODES

LABEL = "Mode"


class ModePicker(FileComponent):
    label = param.String(default=LABEL, constant=True, doc="The group's caption")
    sglang_modes = param.List(
        default=list(SGLANG_MODES), constant=True, doc="The modes that play on SGLang"
    )

    _esm = "mode_picker.js"
