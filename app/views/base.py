"""A view = a pure `render(timeline, step)`, shown through a StepDeck.

Every step's HTML is rendered when the timeline opens and sent once; the step
controls then move every deck in the browser (see step_deck.py).
"""

from __future__ import annotations

import html

import panel as pn
import param

from app.errors import logged
from app.state import SimulatorState
from app.theme import CSS
from app.views.step_deck import Deck, StepDeck, timeline_key
from engine.timeline import Timeline


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def render_deck(render: object, timeline: Timeline) -> Deck:
    assert callable(render)
    return Deck.of([render(timeline, step) for step in range(len(timeline.steps))])


class StepView(pn.viewable.Viewer):
    """Renders `render(timeline, step)`; subclasses only write that pure function."""

    state = param.ClassSelector(class_=SimulatorState)

    stylesheet: str = CSS
    css_class: str = ""

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._deck = StepDeck(
            sizing_mode="stretch_width",
            stylesheets=[self.stylesheet],
            css_classes=[self.css_class] if self.css_class else [],
            margin=0,
        )
        self._timeline: Timeline | None = None
        self.state.param.watch(self._refresh, ["timeline"])
        self._refresh()

    @staticmethod
    def render(timeline: Timeline, step: int) -> str:
        raise NotImplementedError

    @logged
    def _refresh(self, *_: object) -> None:
        timeline = self.state.timeline
        assert timeline is not None
        if timeline is self._timeline:
            return
        self._timeline = timeline
        deck = render_deck(self.render, timeline)
        # A view with nothing to show for the whole timeline leaves the layout.
        self._deck.visible = any(deck.pages)
        self._deck.show(deck, timeline_key(timeline), self.state.step)

    @property
    def html(self) -> str:
        """What the browser shows at the current step (for tests)."""
        return self._deck.page(self.state.step)

    @property
    def visible(self) -> bool:
        return bool(self._deck.visible)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._deck
