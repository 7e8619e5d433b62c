"""Predict, then see: before a step that carries a lesson, a question about it.

The questions and their answers come from the timeline (app/data/questions.py); every
step's questions, in every mode of the scenario, are sent once in the page's document
(views/sender.py), and the panel (quiz.js) follows the player, so answering needs no
Python (it works on the static site before Python is ready). The score stays in the
browser (localStorage). On by default on the full page, where the learner can switch
it off; off in the embed unless its address says `quiz=1`.
"""

from __future__ import annotations

from typing import ClassVar

import param

from app.components.esm import FileComponent
from app.data.url import browser_names
from app.style.stylesheets import stylesheet
from app.style.theme import FOCUS_RING

STORAGE_KEY = "pcl-quiz"


class QuizPanel(FileComponent):
    compact = param.Boolean(default=False, doc="The embed: off unless the address says quiz=1")
    storage_key = param.String(default=STORAGE_KEY, constant=True)
    address = param.Dict(default=browser_names(), constant=True, doc="url.py's (address.js)")

    _esm = "quiz.js"

    _stylesheets: ClassVar[list[str]] = [FOCUS_RING, stylesheet("app.components", "quiz.css")]
