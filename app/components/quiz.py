"""The questions' panel in the browser (quiz.js): every step's questions, in every mode
of the scenario, held at once; it follows the step channel and keeps the score in
localStorage, so answering needs no Python."""

from __future__ import annotations

from typing import ClassVar

import param

from app.components.step_deck import LeanComponent
from app.stylesheets import stylesheet

STORAGE_KEY = "pcl-quiz"


class QuizPanel(LeanComponent):
    questions = param.Dict(default={}, doc="Timeline key -> per step, its questions")
    key = param.String(default="", doc="The timeline to show until the channel names one held")
    step = param.Integer(default=0, doc="The step to show until the channel names one held")
    compact = param.Boolean(default=False, doc="The embed: off unless the address says quiz=1")
    storage_key = param.String(default=STORAGE_KEY, constant=True)

    _esm = "quiz.js"

    def holds_page(self, key: str, step: int) -> bool:
        """Whether the browser has this position's questions (every step of a timeline held)."""
        return 0 <= step < len(self.questions.get(key, []))

    _stylesheets: ClassVar[list[str]] = [stylesheet("app.components", "quiz.css")]
