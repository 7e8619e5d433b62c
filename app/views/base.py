"""A view = a pure `render(timeline, step)`, shown through a StepDeck.

Every step's HTML, in every mode of the scenario, is rendered when the
scenario opens and sent once (the shown step and its neighbours first, the
others a moment later: fill_deck); the player (app/components/player.py) then
moves every deck in the browser (see step_deck.py). A large timeline (blocks x
steps from SENT_AROUND_FROM, app/bundle.py) is rendered a few steps at a time,
around the step shown.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable

import panel as pn
import param
from bokeh.document import Document

from app.bundle import render_deck, sends_every_step
from app.components.step_deck import NOT_SENT, Deck, Outbox, StepDeck
from app.errors import logged
from app.render.engines import AnyTimeline as Timeline  # either engine's
from app.runtime import in_pyodide
from app.state import SimulatorState
from app.stylesheets import stylesheet
from app.theme import CSS
from app.timelines import timeline_key

# How a glossary term looks inside a view (app/render/glossary.py writes the links).
TERM_CSS = stylesheet("app.views", "term.css")
# The embed's denser spacing (layout.py), on top of the app's stylesheet.
COMPACT_CSS = stylesheet("app.views", "compact.css")
# How long after a deck's first pages (fill_deck) the others are rendered and sent.
REST_AFTER_S = 0.05


class Follower:
    """How every browser component that holds pages per position (a StepDeck, the code
    panel, the quiz) follows the open scenario: a new timeline moves it to pages it holds
    (another mode of the open scenario) or has ``render`` fill it (a new scenario); a step
    of the same timeline renders only where its page is not held (a large timeline's
    deck holds the steps around the shown one)."""

    def __init__(self, holds_page: Callable[[str, int], bool], render: Callable[[], None]) -> None:
        self._holds_page = holds_page
        self._render = render
        self.timeline: Timeline | None = None

    def is_new(self, state: SimulatorState | None) -> bool:
        """Whether the state's timeline is another than the one last followed."""
        assert state is not None  # a view's `state` parameter (never None once made)
        return state.timeline is not self.timeline

    def follow(self, state: SimulatorState | None, stale: bool = False) -> None:
        """Bring the component to the state's position. ``stale``: what it holds is out
        of date (the learner's picks changed), so a new timeline is rendered, not moved to."""
        assert state is not None
        key, step = state.key, state.step
        held = self._holds_page(key, step)
        if self.is_new(state):
            self.timeline = state.timeline
            if stale or not held:  # (held: the player has shown it already)
                self._render()
        elif not held:
            self._render()


# The Pyodide documents whose page is up (mark_page_up): the static site's live page,
# once the early page has handed over to it.
_PAGES_UP: weakref.WeakSet[Document] = weakref.WeakSet()


def mark_page_up() -> None:
    """Called once the page's document is loaded (pn.state.onload, app/main.py)."""
    if pn.state.curdoc is not None:
        _PAGES_UP.add(pn.state.curdoc)


def defers_rest() -> bool:
    """Whether the first pages reach the browser before the rest is rendered: on a
    server's session, and in Pyodide once the page is up. Elsewhere a deferred load
    would only be waited for (tests, scripts) or never run: the static site's
    pre-rendered copies are made on a document with a stand-in session that runs no
    callbacks (panel.io.convert). Before the Pyodide page is up, the static site's
    early page hands over to it (tests/site/test_early_playground.py) at the mode and
    step the learner was on, which the live decks must hold: there a deck loads whole."""
    doc = pn.state.curdoc
    context = doc.session_context if doc else None
    if getattr(context, "server_context", None) is not None:
        return True
    return in_pyodide() and doc in _PAGES_UP


def still_open(state: SimulatorState | None, timelines: tuple[Timeline, ...]) -> bool:
    """Whether the state still shows these very timelines (a deferred load checks that its
    pages are not stale)."""
    assert state is not None  # a view's `state` parameter (never None once made)
    return [id(t) for t in state.scenario_timelines] == [id(t) for t in timelines]


def first_then_rest(
    state: SimulatorState | None, first: Callable[[bool], bool], rest: Callable[[], None]
) -> None:
    """Send new timelines in two: ``first(around_only)`` sends now (``around_only``: only
    the shown step's neighbourhood, where the rest can reach the browser later:
    defers_rest) and says whether anything is left; ``rest()`` sends that on the next
    tick (later), unless the state shows other timelines by then (stale)."""
    assert state is not None  # a view's `state` parameter (never None once made)
    timelines = state.scenario_timelines
    if first(defers_rest()):
        later(lambda: rest() if still_open(state, timelines) else None)


def fill_deck(
    deck: StepDeck,
    render: Callable[[Timeline, int], str],
    state: SimulatorState | None,  # a view's `state` parameter (never None once made)
    loaded: Callable[[Deck, bool], None] | None = None,
) -> None:
    """Load the open scenario's pages into ``deck`` (first_then_rest), so a learner's
    edit changes every view before the last page of it is rendered and sent. A large
    timeline's other pages wait for its step to move (Follower.follow).
    ``loaded(deck, whole)`` is called after each load; ``whole``: every page is in it
    that will be sent without the step moving."""
    assert state is not None
    timelines, key, step = state.scenario_timelines, state.key, state.step
    rendered: dict[tuple[int, int], str] = {}  # the first load's pages, not rendered twice
    first: list[Deck] = []

    def page(timeline: Timeline, step: int) -> str:
        at = (id(timeline), step)
        if at not in rendered:
            rendered[at] = render(timeline, step)
        return rendered[at]

    def send_first(around_only: bool) -> bool:
        first.append(render_deck(page, timelines, (key, step), around_only))
        deck.load(first[0])
        orders = first[0].orders
        small = [timeline_key(t) for t in timelines if sends_every_step(t)]
        whole = all(NOT_SENT not in orders[key] for key in small)
        if loaded is not None:
            loaded(first[0], whole)
        return not whole

    def send_rest() -> None:
        if deck.loaded is not first[0]:
            return  # a newer load: this one is stale
        rest = render_deck(page, timelines, (state.key, state.step))
        deck.load(rest)
        if loaded is not None:
            loaded(rest, True)

    first_then_rest(state, send_first, send_rest)


# Per document: the callbacks given to `later` that have not run yet.
_LATER: weakref.WeakKeyDictionary[Document, list[Callable[[], None]]] = weakref.WeakKeyDictionary()


def later(callback: Callable[[], None]) -> None:
    """Run ``callback`` REST_AFTER_S after this change has gone to the browser (only where
    defers_rest). A moment's wait lets the learner's next keystroke come first: its edit
    makes what ``callback`` would send stale, and ``callback`` checks for that. The
    callbacks a document is given meanwhile run together, and their changes go to the
    browser as one message."""
    doc = pn.state.curdoc
    if doc is None:
        queued = [callback]
    elif doc in _LATER:
        _LATER[doc].append(callback)
        return
    else:
        queued = _LATER[doc] = [callback]

    async def run() -> None:
        try:
            await asyncio.sleep(REST_AFTER_S)
        finally:  # (a callback that asks for `later` starts the next batch)
            if doc is not None:
                _LATER.pop(doc, None)
        with pn.io.hold(doc):
            for each in queued:
                logged(each)()

    pn.state.execute(run)


class StepView(pn.viewable.Viewer):
    """Renders `render(timeline, step)`; subclasses only write that pure function."""

    state = param.ClassSelector(class_=SimulatorState)
    compact = param.Boolean(default=False, doc="The embed's denser spacing")
    outbox = param.ClassSelector(class_=Outbox, doc="The player's bundle (Controls.outbox)")

    stylesheet: str = CSS
    css_class: str = ""

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._deck = StepDeck(
            outbox=self.outbox,
            view=type(self).__name__,
            sizing_mode="stretch_width",
            stylesheets=[self.stylesheet, TERM_CSS, *([COMPACT_CSS] if self.compact else [])],
            css_classes=[self.css_class] if self.css_class else [],
            margin=0,
        )
        self._follower = Follower(self._deck.holds_page, self._render_deck)
        self.state.param.watch(self._refresh, ["timeline", "step"])
        self._refresh()

    @staticmethod
    def render(timeline: Timeline, step: int) -> str:
        raise NotImplementedError

    @logged
    def _refresh(self, *_: object) -> None:
        self._follower.follow(self.state)

    def _render_deck(self) -> None:
        fill_deck(self._deck, self.render, self.state, self._loaded)

    def _loaded(self, deck: Deck, whole: bool) -> None:
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
        return self._deck.page(self.state.key, self.state.step)

    @property
    def visible(self) -> bool:
        return bool(self._deck.visible)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._deck
