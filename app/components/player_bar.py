"""The step controls, in the browser: Restart, Step back, Step forward, Play, speed, scrubber.

Every step's views, in every mode of the scenario, are already in the browser
(StepDeck), so a step needs no Python: the bar moves the step itself, tells the
page (the step channel every deck listens to), and then syncs `key` and `step`
to Python, which keeps the address bar and the learner-driven views in line.
A mode picked (mode_picker.py) reaches the bar on the same channel. A click
shows its step within a frame, in `panel serve` and in the static site alike,
where a round trip through Python takes 40 to 100 ms.

The rules of stepping live here and only here: steps stay within 0..last,
Play stops by itself at the last step, Play at the last step replays from 0,
and Step back, Restart or the scrubber pause.

On the static site the bar works before Python is ready (early_steps.py); the
live page's bar carries on from the mode, step, Play and speed its copy left.
"""

from __future__ import annotations

from typing import ClassVar

import param

from app.components.step_deck import LeanComponent

# Steps per second offered by the speed control, and their labels.
SPEEDS: dict[str, float] = {"0.5 steps/s": 0.5, "1 step/s": 1.0, "2 steps/s": 2.0, "4 steps/s": 4.0}
DEFAULT_SPEED = 1.0
# The buttons' names (keyboard.py presses them by name).
RESTART, BACK, FORWARD, PLAY, PAUSE = "Restart", "Step back", "Step forward", "Play", "Pause"
BUTTON_NAMES = (RESTART, BACK, FORWARD, PLAY, PAUSE)


class PlayerBar(LeanComponent):
    key = param.String(default="", doc="The timeline shown; set by the browser or by Python")
    step = param.Integer(default=0, doc="The step shown; set by the browser or by Python")
    lasts = param.Dict(default={}, doc="Timeline key -> last step, for every mode held")
    playing = param.Boolean(default=False, doc="From the browser: Play is running")
    speed = param.Number(default=DEFAULT_SPEED, doc="Steps per second while playing")
    speeds = param.List(
        default=[list(item) for item in SPEEDS.items()], constant=True, doc="[label, steps/s]"
    )
    names = param.List(default=list(BUTTON_NAMES), constant=True, doc="The buttons' names")

    _esm = "player_bar.js"
    # On a server Panel holds a change from the browser for 50 ms, while an edit's runs on
    # the next tick (at_once.py): an edit typed right after a step would open at the step
    # before it, and Python's own write of `step` meanwhile drops the held one (Panel's
    # _update_model). The position goes first, in the order it was taken.
    _priority_changes: ClassVar[list[str]] = ["key", "step"]
