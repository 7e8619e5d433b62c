"""The panel of app/render/header.py: every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.header import render_embed_header, render_header
from app.views.base import StepView


class HeaderView(StepView):
    render = staticmethod(render_header)


class EmbedHeaderView(StepView):
    render = staticmethod(render_embed_header)
