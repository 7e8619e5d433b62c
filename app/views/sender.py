"""The one sender of an App: it follows the learner's position (app/views/state.py) and sends
what app/data/bundle.py builds into the player's bundle (Outbox, app/components/step_deck.py).

- New timelines (a scenario, an edit, a playground's other mode): every registered
  part, i.e. each view's pages, the code panel's plan and the questions, and for a new
  scenario the position the player opens at. Where the rest can reach the browser
  later (defers_rest), the shown step's neighbourhood goes first and the rest on the
  next tick once the browser holds the first (its acknowledgement), all parts in one
  message, unless an edit made them stale by then.
- A step the browser does not hold (a large timeline's, SENT_AROUND_FROM, or one whose
  rest never came): the pages around it, the same way. A step it holds whose neighbours
  it does not (a large timeline's, stepped to the edge of what was sent): the pages
  around it too, so the next step is in the browser before the learner asks for it;
  the pages already rendered are not rendered again.
- A view whose pages follow the learner's own picks (the hash chain, the prefill
  calculator) answers the pick with its pages anew (deck).
- The position of a new scenario names every mode's last step (`lasts`); where the
  first part goes first, a large playground's modes not counted yet (each a run of the
  engine: app/playground/store.py) are None in it, and counted after the first part is
  sent, with the rest (or on their own, a moment later): the position again, the same
  serial, every last step in it (player.js holds a mode picked meanwhile until then).

A step or a mode the browser holds sends nothing.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

import panel as pn
from bokeh.document import Document

from app.components.step_deck import Outbox
from app.components.step_page import StepPage
from app.data.bundle import (
    Deck,
    Render,
    bundle,
    position_part,
    sends_every_step,
    sent_steps,
    steps_around,
)
from app.data.timelines import timeline_key
from app.host.errors import logged
from app.host.runtime import in_pyodide
from app.render.engines import AnyTimeline as Timeline  # either engine's
from app.views.state import SimulatorState

# The parts that are not a view's pages.
CODE, QUESTIONS = "code", "questions"
# How long after the first part the rest is rendered and sent: the learner's next
# keystroke comes first, and its edit makes the rest stale before it is rendered.
REST_AFTER_S = 0.05
# The rest also waits for the browser to hold the first part. On a server a write made
# between Bokeh's reply to the page's document pull and the page having its document is
# dropped by the page (bokehjs ignores a patch that comes before the document): a rest
# sent then never arrived, while Python took it as held (CI, under load: a step or a mode
# that never showed). A write after the page's first acknowledgement cannot be lost so.
# In Pyodide no write is lost that way, and the page's acknowledgements were seen not to
# reach Python after its first few (the static site's soak, December 2026; cause not
# found): there a playground's mode counts (send_position) go without waiting for one.

# The code panel's bodies the browser holds are kept for the next scenario or edit while
# they are below this many characters in all (every function of the engine is a few
# times that), so an edit's plan sends no function's source again; past it they start
# afresh.
HELD_BODIES_MAX_CHARS = 400_000

# Told what a part sent: its value (a view's Deck, the code's part), whether it is all
# that will be sent without the step moving, and whether it is a first part.
Sent = Callable[[Any, bool, bool], None]

# The Pyodide documents whose page is up (mark_page_up): the static site's live page,
# once the early page has handed over to it.
_PAGES_UP: weakref.WeakSet[Document] = weakref.WeakSet()


def mark_page_up() -> None:
    """Called once the page's document is loaded (pn.state.onload, app/main.py)."""
    if pn.state.curdoc is not None:
        _PAGES_UP.add(pn.state.curdoc)


def defers_rest() -> bool:
    """Whether the first part reaches the browser before the rest is rendered: on a
    server's session, and in Pyodide once the page is up. Elsewhere a deferred rest
    would only be waited for (tests, scripts, the builder making the static site's early
    pages, which hold every step). Before the Pyodide page is up,
    the static site's early page hands over to it (tests/site/test_early_playground.py)
    at the mode and step the learner was on, which the live page must hold."""
    doc = pn.state.curdoc
    context = doc.session_context if doc else None
    if getattr(context, "server_context", None) is not None:
        return True
    return in_pyodide() and doc in _PAGES_UP


class Sender:
    """Sends every part of the page for the state's position (see the module)."""

    def __init__(self, state: SimulatorState) -> None:
        self.state = state
        self.outbox = Outbox()
        self._parts: dict[str, Render | None] = {}  # part -> a view's render (None: code...)
        self._told: dict[str, Sent] = {}
        self.decks: dict[str, Deck] = {}  # per view: the pages the browser holds
        self.sent: dict[str, Any] = {}  # the code's, bodies', questions', position's last
        self._timelines: tuple[Timeline, ...] = ()
        self._held: dict[str, range] = {}  # per timeline key: the steps the browser holds
        self._pages: dict[tuple[str, int, int], str] = {}  # this round's, not rendered twice
        self._rest: set[str] = set()  # the parts whose rest follows
        self._round = 0  # one per first part; an older round's rest is stale
        self._rest_waits: tuple[int, int] | None = None  # (round, its first part's write)
        self._player = False
        self._bundled = ""  # the scenario whose position the player has
        self._serial = 0  # one per position sent
        self.heard: list[Any] = []  # the position Python last had from the player
        self._uncounted = False  # the position sent has a mode's last step not counted
        state.param.watch(self._follow, ["timeline", "step"])

    def connect(self, player: StepPage) -> None:
        """Send into ``player``'s bundle, the position included."""
        self.outbox.write = lambda text: setattr(player, "bundle", text)
        player.param.watch(self._received, "received")
        self._player = True
        self._follow()

    @property
    def views(self) -> list[str]:
        """The names of the views whose pages it sends."""
        return [part for part, render in self._parts.items() if render is not None]

    def add(self, part: str, render: Render | None = None, told: Sent | None = None) -> None:
        """A view's pages (``render``), or CODE or QUESTIONS; ``told`` hears each send."""
        self._parts[part] = render
        if told is not None:
            self._told[part] = told
        if self.state.timeline is not None and self._same(self.state.scenario_timelines):
            self._send({part})  # (added after the others were sent)
        else:
            self._follow()

    def deck(self, part: str) -> dict[str, Any]:
        """The part's pages anew (the learner's picks changed what it shows), for a reply:
        every step the browser holds of the open scenario's timelines."""
        state = self.state
        self._pages = {at: page for at, page in self._pages.items() if at[0] != part}
        render = self._parts[part]
        assert render is not None
        at = (state.key, state.step)
        sent = bundle(
            self._timelines, {part: self._memo(part, render)}, at, code=False, questions=False
        )
        deck = sent["views"][part]
        self.decks[part] = Deck(deck["pages"], deck["orders"])
        self.outbox.replied("view:" + part, deck)
        return dict(deck)

    def holds(self, key: str, step: int) -> bool:
        """Whether the browser holds this position's pages (every part alike)."""
        return step in self._held.get(key, ())

    def page(self, view: str, key: str, step: int) -> str:
        """A view's page at this position as the browser has it ("" if it has none)."""
        deck = self.decks.get(view)
        order = deck.orders.get(key, ()) if deck else ()
        return deck.page(key, step) if deck and 0 <= step < len(order) else ""

    @logged
    def _follow(self, *_: object) -> None:
        state = self.state
        if state.timeline is None:
            return
        timelines = state.scenario_timelines
        round_ = self._round
        if self._player and state.scenario != self._bundled:
            # (with the pages, in one write; a large timeline's modes not counted follow
            # them: a small one's count in a few ms, not worth a message of their own)
            small = all(sends_every_step(t) for t in timelines)
            self.send_position(flush=False, counted=small or not defers_rest())
        if not self._same(timelines):
            self._timelines, self._held, self._pages, self._rest = timelines, {}, {}, set()
            self._send(set(self._parts))
        elif not self.holds(state.key, state.step):
            self._pages = {}
            self._send(set(self._parts))
        elif not self._rest and not self._holds_around(state.timeline, state.step):
            self._send(set(self._parts))  # ahead of the learner: the next step is ready
        self.outbox.flush()
        if self._uncounted and self._round == round_:  # no rest follows: the count alone
            self._round += 1
            self._rest_soon(self._round, self.outbox.written)

    def _holds_around(self, timeline: Timeline, step: int) -> bool:
        return all(self.holds(self.state.key, s) for s in steps_around(timeline, step))

    def send_position(self, flush: bool = True, counted: bool = True) -> None:
        """Give the player the open scenario and where to open it (also to move it back to
        an address it did not hold), with the position Python last had: a mode the
        learner picked on the scenario left, before the player had this bundle, is meant
        for this one (player.js). Not ``counted``: the modes whose last step is not known
        without playing them are None (_count_lasts sends them)."""
        state = self.state
        self._bundled = state.scenario
        self._serial += 1
        at = (state.key, state.step)
        lasts: dict[str, int | None] = {**(state.lasts if counted else state.counted_lasts)}
        self._put("position", position_part(at, lasts, self._serial, self.heard))
        self._uncounted = None in lasts.values()
        self.heard = list(at)
        if flush:
            self.outbox.flush()

    def _count_lasts(self) -> None:
        """The position sent again with every mode's last step (the same serial: the player
        keeps its position, and honours a pick of a mode that was not counted)."""
        position = self.sent.get("position")
        if not self._uncounted or position is None:
            return
        self._uncounted = False
        if position["scenario"][:1] == [self.state.scenario]:
            self._put("position", {**position, "lasts": self.state.lasts})

    def _same(self, timelines: tuple[Timeline, ...]) -> bool:
        return [id(t) for t in timelines] == [id(t) for t in self._timelines]

    def _send(self, parts: set[str]) -> None:
        """The first part of ``parts`` now; where defers_rest, their rest on the next tick."""
        if not parts:
            return
        around = defers_rest()
        state = self.state
        left = around and any(
            sends_every_step(t) and len(sent_steps(t, (state.key, state.step), True)) < len(t.steps)
            for t in self._timelines
        )
        self._put_bundle(parts, around, first=True, whole=not left)
        if left:
            self._rest |= parts
            self._round += 1
            self._rest_soon(self._round, self.outbox.written)
        else:  # kept: the next step's pages share all but one step with these
            near = steps_around(state.timeline, state.step) if state.timeline else range(0)
            self._pages = {at: page for at, page in self._pages.items() if at[2] in near}

    def _received(self, event: Any) -> None:
        self.outbox.received(event.new)
        waiting, self._rest_waits = self._rest_waits, None
        if waiting is not None:
            self._rest_soon(*waiting, wait=False)

    def _rest_soon(self, round_: int, first_write: int, wait: bool = True) -> None:
        doc = pn.state.curdoc

        async def run() -> None:
            if wait:
                await asyncio.sleep(REST_AFTER_S)
            if round_ != self._round or not self._same(self.state.scenario_timelines):
                return  # a newer round sends the rest, or an edit made it stale
            if self.outbox.held < first_write:
                self._rest_waits = (round_, first_write)  # (_received calls again)
                if in_pyodide():  # no write is lost there: the counts go now, alone
                    with pn.io.hold(doc):
                        logged(self._count_lasts)()
                        self.outbox.flush()
                return
            parts, self._rest = self._rest, set()
            with pn.io.hold(doc):
                logged(self._count_lasts)()  # (in the rest's write)
                if parts:
                    logged(self._put_bundle)(parts, False, first=False, whole=True)
                else:
                    self.outbox.flush()
            self._pages = {}

        pn.state.execute(run)

    def _put_bundle(self, parts: set[str], around_only: bool, first: bool, whole: bool) -> None:
        state = self.state
        at = (state.key, state.step)
        views = {
            part: self._memo(part, render)
            for part, render in self._parts.items()
            if part in parts and render is not None
        }
        frames, bodies = self.sent.get(CODE, {}).get("frames", ()), self.sent.get("bodies", ())
        held = (frames, bodies)  # (the rest keeps the first's indices)
        if first:
            held = ((), bodies if sum(map(len, bodies)) <= HELD_BODIES_MAX_CHARS else ())
        sent = bundle(
            self._timelines,
            views,
            at,
            around_only,
            code=CODE in parts,
            questions=QUESTIONS in parts and first,
            held=held,
        )
        for name, deck in sent["views"].items():
            self.decks[name] = Deck(deck["pages"], deck["orders"])
            self.outbox.put("view:" + name, deck)
            self._tell(name, self.decks[name], whole, first)
        if CODE in parts:
            if sent["bodies"] != bodies:  # (tens of KB each: sent again only when they change)
                self._put("bodies", sent["bodies"])
            self._put(CODE, sent[CODE])
            self._tell(CODE, sent[CODE], whole, first)
        if QUESTIONS in parts and first:
            self._put(QUESTIONS, sent[QUESTIONS])
        if parts >= set(self._parts):
            self._held = {timeline_key(t): sent_steps(t, at, around_only) for t in self._timelines}
        self.outbox.flush()

    def _memo(self, part: str, render: Render) -> Render:
        def page(timeline: Timeline, step: int) -> str:
            at = (part, id(timeline), step)
            if at not in self._pages:
                self._pages[at] = render(timeline, step)
            return self._pages[at]

        return page

    def _put(self, part: str, value: Any) -> None:
        self.sent[part] = value
        self.outbox.put(part, value)

    def _tell(self, part: str, value: Any, whole: bool, first: bool) -> None:
        if part in self._told:
            self._told[part](value, whole, first)
