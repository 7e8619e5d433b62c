"""The questions' panel in the browser (quiz.js): every step's questions, in every mode
of the scenario, held at once; it follows the player and keeps the score in
localStorage, so answering needs no Python."""

from __future__ import annotations

from typing import Any, ClassVar

import param

from app.components.json_text import ParsedJson
from app.components.step_deck import LeanComponent
from app.stylesheets import stylesheet

STORAGE_KEY = "pcl-quiz"


class QuizPanel(LeanComponent):
    # One JSON string, not a nested dict (json_text.py).
    questions_json = param.String(default="{}", doc="JSON: timeline key -> per step, its questions")
    key = param.String(default="", doc="The timeline to show until the player names one held")
    step = param.Integer(default=0, doc="The step to show until the player names one held")
    compact = param.Boolean(default=False, doc="The embed: off unless the address says quiz=1")
    storage_key = param.String(default=STORAGE_KEY, constant=True)

    _esm = "quiz.js"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._questions = ParsedJson()

    @property
    def questions(self) -> dict[str, list[list[dict[str, Any]]]]:
        """``questions_json`` read back (the same JSON the browser parses)."""
        questions: dict[str, list[list[dict[str, Any]]]] = self._questions.read(self.questions_json)
        return questions

    def holds_page(self, key: str, step: int) -> bool:
        """Whether the browser has this position's questions (every step of a timeline held)."""
        return 0 <= step < len(self.questions.get(key, []))

    _stylesheets: ClassVar[list[str]] = [stylesheet("app.components", "quiz.css")]
