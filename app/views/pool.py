"""The panel of app/render/pool.py: every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.pool import render_pool
from app.views.base import StepView


class PoolView(StepView):
    render = staticmethod(render_pool)
