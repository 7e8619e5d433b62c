"""The panel of app/render/narration.py: every step of the timeline, shown through a
StepDeck; on the full page the last step offers the next scenario on the path
(app/render/decks.py)."""

from __future__ import annotations

from app.views.base import StepView


class NarrationView(StepView):
    pass
