"""The stepping page's plain panels: each a StepView whose pure render is the deck of its
class's name in app/render/decks.py (on SGLang the engine's own, or nothing: its deck
hides); here only how each part looks. The full page's narration offers the next
scenario on the path on its last step (app/render/decks.py)."""

from __future__ import annotations

from app.style.stylesheets import stylesheet
from app.style.theme import CSS
from app.views.base import StepView

# The theme, then SGLang's own marks (the radix tree, the KV slots, its requests and
# events): on every view that renders one of them.
SGLANG_CSS = CSS + stylesheet("app.views", "radix_tree.css")


class HeaderView(StepView):
    pass


class EmbedHeaderView(StepView):
    pass


class NarrationView(StepView):
    pass


class PoolView(StepView):  # on SGLang: its KV slots
    stylesheet = SGLANG_CSS


class QueueView(StepView):  # vLLM's free queue: the theme, then its own marks
    stylesheet = CSS + stylesheet("app.views", "queue.css")


class HashMapView(StepView):  # on SGLang: its radix tree
    stylesheet = SGLANG_CSS


class RequestsView(StepView):
    stylesheet = SGLANG_CSS


class LogView(StepView):
    pass


class OffloadView(StepView):
    pass


class MetricsView(StepView):
    stylesheet = SGLANG_CSS


# A step's panels below its header, in the order the App makes them (app/page/layout.py).
PANELS: tuple[type[StepView], ...] = (NarrationView, PoolView, QueueView, HashMapView)
PANELS += (RequestsView, LogView, OffloadView, MetricsView)
