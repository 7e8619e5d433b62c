"""The panel of app/render/offload.py
(on SGLang nothing: its deck hides), every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.engines import per_engine
from app.render.offload import render_offload
from app.views.base import StepView


class OffloadView(StepView):
    render = staticmethod(per_engine(render_offload))
