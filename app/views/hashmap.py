"""The panel of app/render/hashmap.py: every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.hashmap import render_hash_map
from app.views.base import StepView


class HashMapView(StepView):
    render = staticmethod(render_hash_map)
