"""The panel of app/render/hashmap.py
(on SGLang: render_radix_tree), every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.views.base import StepView
from app.views.sglang import SGLANG_CSS


class HashMapView(StepView):
    stylesheet = SGLANG_CSS  # the theme and SGLang's marks (radix_tree.css)
