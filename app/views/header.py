"""The panel of app/render/header.py (sglang_header.py on SGLang): every step of the
timeline, shown through a StepDeck."""

from __future__ import annotations

from app.render.engines import per_engine
from app.render.header import render_embed_header, render_header
from app.render.sglang_header import render_sglang_embed_header, render_sglang_header
from app.views.base import StepView


class HeaderView(StepView):
    render = staticmethod(per_engine(render_header, render_sglang_header))


class EmbedHeaderView(StepView):
    render = staticmethod(per_engine(render_embed_header, render_sglang_embed_header))
