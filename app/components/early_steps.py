"""Stepping before Python is ready, on the static site's pre-rendered page.

The static site opens on a copy of its address's scenario rendered at build
time (build.py pre-renders every scenario, in both layouts), and Pyodide takes
seconds more to start. That copy already holds every step of every mode of its
scenario (StepDeck), the mode picker, the step controls and the scenario
picker (which, before Python, opens the picked scenario's own page), none of
which needs Python. So, while Python starts, this component lifts Panel's
loading veil, lets those controls, the keyboard shortcuts, links and disclosures
work, and holds back every other control (function and request pickers, the
prefill calculator: they need Python), saying so in a status line that also
names the loading stage. When the live page replaces the copy, its controls
keep the mode and step the learner reached.

It acts only when the copy holds what the address asks for (`?mode=keep&step=5`
of its scenario, in its layout), and opens there. Any other address, or one
Python would correct with a notice, waits for Python under the veil, as before:
parse_link stays the one judge of an address, this only recognises the plain
valid ones. Under `panel serve` there is no copy (no `pn-loading` page) and it
does nothing."""

from __future__ import annotations

import param

from app.components.esm import FileComponent
from app.page.stylesheets import stylesheet

HINT = "Steps, modes and scenarios work now; the other controls start with Python."
# The address parameters a copy follows: a position, and `quiz` (components/quiz.js reads it).
# Any other must be as the copy was rendered.
POSITION_PARAMETERS = ("scenario", "mode", "step", "quiz")


class EarlySteps(FileComponent):
    query = param.String(default="", doc="The address of the state this page was rendered at")
    lasts = param.Dict(default={}, doc="Timeline key -> last step, for every mode of the copy")
    default_scenario = param.String(default="", doc="The scenario of an address that names none")

    style = param.String(
        default=stylesheet("app.components", "early_steps.css")
        + stylesheet("app.components", "status_note.css"),
        constant=True,
        doc="The page's style while the copy steps before Python",
    )
    hint = param.String(default=HINT, constant=True, doc="What the status line says")
    position_parameters = param.List(
        default=list(POSITION_PARAMETERS), constant=True, doc="Address parameters of a position"
    )

    _esm = "early_steps.js"
