"""The panel of app/render/metrics.py: every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.metrics import render_metrics
from app.views.base import StepView


class MetricsView(StepView):
    render = staticmethod(render_metrics)
