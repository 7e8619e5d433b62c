"""A view = a pure `render(timeline, step)` (app/render/decks.py, by the view's name),
declared as a StepView and shown in a slot (a StepDeck): the App's one Sender
(views/sender.py) renders and sends its pages with every other part of the page, and
the player (app/components/player.py) moves every slot in the browser (see
step_deck.py).
"""

from __future__ import annotations

from typing import Any

import panel as pn
import param

from app.components.step_deck import StepDeck
from app.data.bundle import Render
from app.render.decks import DECKS, deck_render
from app.render.engines import AnyTimeline as Timeline  # either engine's
from app.style.stylesheets import stylesheet
from app.style.theme import CSS
from app.views.sender import Sender
from app.views.state import SimulatorState

# How a glossary term looks inside a view (app/render/glossary.py writes the links).
TERM_CSS = stylesheet("app.views", "term.css")
# The embed's denser spacing (layout.py), on top of the app's stylesheet.
COMPACT_CSS = stylesheet("app.views", "compact.css")


def sender_of(view: Any) -> Sender:
    """The view's `sender`, or its own one where it was made without an App (tests)."""
    if view.sender is None:
        view.sender = Sender(view.state)
    elif view.state is None:
        view.state = view.sender.state
    sender: Sender = view.sender
    return sender


class StepView(pn.viewable.Viewer):
    """A declaration: a subclass says how the slot looks; its pure `render` is the deck
    of its name's in app/render/decks.py (or its own, for a test's view)."""

    state = param.ClassSelector(class_=SimulatorState)
    sender = param.ClassSelector(class_=Sender, doc="The App's one sender")
    compact = param.Boolean(default=False, doc="The embed's denser spacing")

    stylesheet: str = CSS
    css_class: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "render" not in vars(cls) and cls.__name__ in DECKS:
            cls.render = staticmethod(DECKS[cls.__name__])  # type: ignore[method-assign]

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._deck = StepDeck(
            view=type(self).__name__,
            sizing_mode="stretch_width",
            stylesheets=[self.stylesheet, TERM_CSS, *([COMPACT_CSS] if self.compact else [])],
            css_classes=[self.css_class] if self.css_class else [],
            margin=0,
        )
        sender_of(self).add(self._deck.view, self.pages(), self._loaded)

    @staticmethod
    def render(timeline: Timeline, step: int) -> str:
        raise NotImplementedError

    def pages(self) -> Render:
        """What the sender renders the view's pages with: its `render`, or its layout's
        (the full page's narration offers the next scenario on the path)."""
        name = type(self).__name__
        return deck_render(name, self.compact) if name in DECKS else self.render

    def _loaded(self, deck: Any, whole: bool, _first: bool) -> None:
        # A view with nothing to show in the whole scenario leaves the layout. Until its
        # every page is known (a large timeline's never is) it stays as it was unless a
        # page has something (an empty page hides it in the browser meanwhile): showing
        # and hiding it on each edit would lay the page out twice.
        visible = any(deck.pages) or (not whole and self._deck.visible)
        if self._deck.visible != visible:
            self._deck.visible = visible

    @property
    def html(self) -> str:
        """What the browser shows at the current step (for tests)."""
        return self.sender.page(self._deck.view, self.state.key, self.state.step)

    @property
    def visible(self) -> bool:
        return bool(self._deck.visible)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._deck
