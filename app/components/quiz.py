"""The questions' panel in the browser (quiz.js): every step's questions, in every mode
of the scenario, held at once in the player's bundle; it follows the player and keeps
the score in localStorage, so answering needs no Python."""

from __future__ import annotations

from typing import Any, ClassVar

import param

from app.components.step_deck import LeanComponent, Outbox
from app.stylesheets import stylesheet

STORAGE_KEY = "pcl-quiz"


class QuizPanel(LeanComponent):
    compact = param.Boolean(default=False, doc="The embed: off unless the address says quiz=1")
    storage_key = param.String(default=STORAGE_KEY, constant=True)

    _esm = "quiz.js"

    def __init__(self, outbox: Outbox | None = None, **params: Any) -> None:
        super().__init__(**params)
        self._outbox = outbox or Outbox()
        self.questions: dict[str, list[list[dict[str, Any]]]] = {}

    def load(self, questions: dict[str, list[list[dict[str, Any]]]]) -> None:
        """Every step's questions of every mode, into the bundle."""
        self.questions = questions
        self._outbox.put("questions", questions)

    def holds_page(self, key: str, step: int) -> bool:
        """Whether the browser has this position's questions (every step of a timeline held)."""
        return 0 <= step < len(self.questions.get(key, []))

    _stylesheets: ClassVar[list[str]] = [stylesheet("app.components", "quiz.css")]
