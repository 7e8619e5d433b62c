"""The panel of app/render/requests.py
(on SGLang: render_sglang_requests), every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.engines import per_engine
from app.render.requests import render_requests
from app.render.sglang_requests import render_sglang_requests
from app.views.base import StepView
from app.views.sglang import SGLANG_CSS


class RequestsView(StepView):
    render = staticmethod(per_engine(render_requests, render_sglang_requests))
    stylesheet = SGLANG_CSS  # the theme and SGLang's marks (radix_tree.css)
