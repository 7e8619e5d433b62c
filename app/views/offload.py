"""The panel of app/render/offload.py
(on SGLang nothing: its deck hides), every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.views.base import StepView


class OffloadView(StepView):
    """Its render: app/render/decks.py."""
