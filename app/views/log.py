"""The panel of app/render/log.py: every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.views.base import StepView


class LogView(StepView):
    """Its render: app/render/decks.py."""
