"""A view = a pure `render(timeline, step)` (app/render/decks.py, by the view's name),
declared as a StepView: the App's one Sender (views/sender.py) renders and sends its
pages with every other part of the page, and the stepping page
(app/components/step_page.py) shows them in the browser at the player's position.
"""

from __future__ import annotations

from typing import Any

import param

from app.components.step_page import StepPage
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


class PagePart(param.Parameterized):
    """A part of the stepping page on Python's side: what Python opened, the App's one
    sender, and the page whose requests it answers."""

    state = param.ClassSelector(class_=SimulatorState)
    sender = param.ClassSelector(class_=Sender, doc="The App's one sender")
    page = param.ClassSelector(class_=StepPage, doc="The stepping page")

    part = ""  # its pages' name in the document (a view's: its class's)

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        if self.sender is None:  # made without an App (tests): a sender and page of its own
            assert self.state is not None
            self.sender = Sender(self.state)
            self.page = self.page or StepPage()
        self.state = self.sender.state

    @property
    def html(self) -> str:
        """What the browser shows at the current step (for tests)."""
        return self.sender.page(self.part, self.state.key, self.state.step)


class StepView(PagePart):
    """A declaration: a subclass says how its part looks (its stylesheets); its pure
    `render` is the deck of its name's in app/render/decks.py (or its own, for a test's
    view)."""

    compact = param.Boolean(default=False, doc="The embed's denser spacing")

    stylesheet: str = CSS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.part = cls.__name__
        if "render" not in vars(cls) and cls.__name__ in DECKS:
            cls.render = staticmethod(DECKS[cls.__name__])  # type: ignore[method-assign]

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.sender.add(self.part, self.pages())

    @property
    def stylesheets(self) -> list[str]:
        """Its part's stylesheets on the stepping page."""
        return [self.stylesheet, TERM_CSS, *([COMPACT_CSS] if self.compact else [])]

    @staticmethod
    def render(timeline: Timeline, step: int) -> str:
        raise NotImplementedError

    def pages(self) -> Render:
        """What the sender renders the view's pages with: its `render`, or its layout's
        (the full page's narration offers the next scenario on the path)."""
        return deck_render(self.part, self.compact) if self.part in DECKS else self.render
