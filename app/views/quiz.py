"""Predict, then see: before a step that carries a lesson, a question about it.

The questions and their answers come from the timeline (app/questions.py); every
step's questions, in every mode of the scenario, are sent once, like a StepDeck's
pages, and the QuizPanel (app/components/quiz.py) follows the player, so
answering needs no Python (it works on the static site before Python is ready). The
score stays in the browser (localStorage). On by default on the full page, where the
learner can switch it off; off in the embed unless its address says `quiz=1`.
"""

from __future__ import annotations

import param

from app.components.quiz import QuizPanel
from app.components.step_deck import Outbox
from app.errors import logged
from app.questions import all_questions
from app.state import SimulatorState
from app.timelines import timeline_key
from app.views.base import Follower


class Quiz(param.Parameterized):
    """Keeps a QuizPanel on the open scenario (every mode's questions at once)."""

    state = param.ClassSelector(class_=SimulatorState)
    outbox = param.ClassSelector(class_=Outbox, doc="The player's bundle (Controls.outbox)")

    def __init__(self, compact: bool = False, **params: object) -> None:
        super().__init__(**params)
        self.panel = QuizPanel(
            outbox=self.outbox, compact=compact, sizing_mode="stretch_width", margin=0
        )
        self._follower = Follower(self.panel.holds_page, self._send_questions)
        self.state.param.watch(self._refresh, ["timeline"])
        self._refresh()

    @logged
    def _refresh(self, *_: object) -> None:
        self._follower.follow(self.state)

    def _send_questions(self) -> None:
        """A new scenario: every step's questions of every mode, in one update."""
        state = self.state
        questions = {timeline_key(t): all_questions(t) for t in state.scenario_timelines}
        self.panel.load(questions)
