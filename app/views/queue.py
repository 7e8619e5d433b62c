"""The panel of app/render/queue.py (vLLM's free queue; nothing on SGLang, whose
deck hides): every step of the timeline, shown through a StepDeck."""

from __future__ import annotations

from pathlib import Path

from app.style.theme import CSS
from app.views.base import StepView

QUEUE_CSS = Path(__file__).with_name("queue.css").read_text(encoding="utf-8")


class QueueView(StepView):
    stylesheet = CSS + QUEUE_CSS  # the theme, then the queue's own marks (queue.css)
