"""The panel of app/render/hashmap.py
(on SGLang: render_radix_tree), every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.engines import per_engine
from app.render.hashmap import render_hash_map
from app.render.radix_tree import render_radix_tree
from app.views.base import StepView
from app.views.sglang import SGLANG_CSS


class HashMapView(StepView):
    render = staticmethod(per_engine(render_hash_map, render_radix_tree))
    stylesheet = SGLANG_CSS  # the theme and SGLang's marks (radix_tree.css)
