"""The panel of app/render/metrics.py
(on SGLang: render_sglang_metrics), every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.views.base import StepView
from app.views.sglang import SGLANG_CSS


class MetricsView(StepView):
    stylesheet = SGLANG_CSS  # the theme and SGLang's marks (radix_tree.css)
