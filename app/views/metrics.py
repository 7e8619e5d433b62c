"""The panel of app/render/metrics.py
(on SGLang: render_sglang_metrics), every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.engines import per_engine
from app.render.metrics import render_metrics
from app.render.sglang_metrics import render_sglang_metrics
from app.views.base import StepView
from app.views.sglang import SGLANG_CSS


class MetricsView(StepView):
    render = staticmethod(per_engine(render_metrics, render_sglang_metrics))
    stylesheet = SGLANG_CSS  # the theme and SGLang's marks (radix_tree.css)
