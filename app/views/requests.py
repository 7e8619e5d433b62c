"""The panel of app/render/requests.py: every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.requests import render_requests
from app.views.base import StepView


class RequestsView(StepView):
    render = staticmethod(render_requests)
