"""The panel of app/render/pool.py
(on SGLang: render_kv_slots), every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.engines import per_engine
from app.render.kv_slots import render_kv_slots
from app.render.pool import render_pool
from app.views.base import StepView
from app.views.sglang import SGLANG_CSS


class PoolView(StepView):
    render = staticmethod(per_engine(render_pool, render_kv_slots))
    stylesheet = SGLANG_CSS  # the theme and SGLang's marks (radix_tree.css)
