"""The panel of app/render/header.py (sglang_header.py on SGLang): every step of the
timeline, shown through a StepDeck."""

from __future__ import annotations

from app.views.base import StepView


class HeaderView(StepView):
    """Its render: app/render/decks.py."""


class EmbedHeaderView(StepView):
    """Its render: app/render/decks.py."""
