"""The panel of app/render/offload.py: every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.offload import render_offload
from app.views.base import StepView


class OffloadView(StepView):
    render = staticmethod(render_offload)
