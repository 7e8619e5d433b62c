"""A view = a pure `render(timeline, step)`, shown through a StepDeck.

Every step's HTML, in every mode of the scenario, is rendered when the
scenario opens and sent once; the step controls and the mode picker then move
every deck in the browser (see step_deck.py).
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param

from app.components.step_deck import Deck, StepDeck
from app.errors import logged
from app.state import SimulatorState
from app.stylesheets import stylesheet
from app.theme import CSS
from app.timelines import timeline_key
from engine.lab.timeline import Timeline

# How a glossary term looks inside a view (app/render/glossary.py writes the links).
TERM_CSS = stylesheet("app.views", "term.css")
# The embed's denser spacing (layout.py), on top of the app's stylesheet.
COMPACT_CSS = stylesheet("app.views", "compact.css")


def move_or_render(deck: StepDeck, key: str, step: int, render: Callable[[], None]) -> None:
    """A new timeline at `key`: one the deck holds (another mode of the open scenario)
    only moves the deck there; any other (a new scenario) has `render` fill it."""
    if deck.holds(key):
        deck.param.update(key=key, step=step)
    else:
        render()


def render_deck(render: object, timelines: tuple[Timeline, ...]) -> Deck:
    assert callable(render)
    return Deck.of(
        {
            timeline_key(timeline): [render(timeline, step) for step in range(len(timeline.steps))]
            for timeline in timelines
        }
    )


class StepView(pn.viewable.Viewer):
    """Renders `render(timeline, step)`; subclasses only write that pure function."""

    state = param.ClassSelector(class_=SimulatorState)
    compact = param.Boolean(default=False, doc="The embed's denser spacing")

    stylesheet: str = CSS
    css_class: str = ""

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._deck = StepDeck(
            sizing_mode="stretch_width",
            stylesheets=[self.stylesheet, TERM_CSS, *([COMPACT_CSS] if self.compact else [])],
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
        move_or_render(self._deck, self.state.key, self.state.step, self._render_deck)

    def _render_deck(self) -> None:
        deck = render_deck(self.render, self.state.scenario_timelines)
        # A view with nothing to show in the whole scenario leaves the layout.
        self._deck.visible = any(deck.pages)
        self._deck.load(deck, self.state.key, self.state.step)

    @property
    def html(self) -> str:
        """What the browser shows at the current step (for tests)."""
        return self._deck.page(self.state.key, self.state.step)

    @property
    def visible(self) -> bool:
        return bool(self._deck.visible)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._deck
