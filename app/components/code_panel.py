"""The code panel in the browser: every step's code sent once per scenario.

A function's highlighted source is tens of kilobytes of HTML and the same
function runs at many steps (and in every mode), so the bundle (step_deck.py's
Outbox) carries, for the scenario's timelines, the distinct frames (heading,
legend) and bodies (a function's lines, unmarked) and a plan per timeline: per
step, which frame and body show the step's focus function, which lines ran, which
ran last, and the names of every function that ran (null: not sent yet). The
player (player.py) announces them with the position. The browser marks the lines
and scrolls the code box (not the page) so the last line that ran sits in its middle.

The function picker lives here too: picking the focus shows the plan; picking
another function asks Python (`pick`), whose answer (`picked`) is shown while
the position and the pick still match.
"""

from __future__ import annotations

import param

from app.components.esm import FileComponent

PICKER_LABEL = "Functions that ran at this step (in the order entered)"


class CodePanel(FileComponent):
    pick = param.List(default=[], doc="From the browser: [key, step, index] of a picked function")
    picked = param.Dict(default={}, doc="The picked function's position, index, frame, body, marks")

    picker_label = param.String(default=PICKER_LABEL, constant=True, doc="The picker's caption")

    _esm = "code_panel.js"
