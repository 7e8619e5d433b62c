"""The panel of app/render/log.py: every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.log import render_log
from app.views.base import StepView


class LogView(StepView):
    render = staticmethod(render_log)
