"""The panel of app/render/narration.py: every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.narration import render_narration
from app.views.base import StepView


class NarrationView(StepView):
    render = staticmethod(render_narration)
