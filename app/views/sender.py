"""The App's one sender: the document the stepping page shows (app/data/bundle.py), written
into the page's `document_json` when the scenario's timelines change, and only then (a
scenario picked, an address opened, a copy to edit: it opens at its `at`; a playground
edited: the page keeps its position where it can, `keep`; a playground's mode asked for).
Python holds no position. A large timeline (SENT_AROUND_FROM) sends the steps around `at`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from app.data.bundle import Render, bundle, document_head, sends_every_step
from app.data.timelines import split_key, timeline_key
from app.render.engines import AnyTimeline as Timeline  # either engine's
from app.views.state import SimulatorState

# The parts that are not a view's pages.
CODE, QUESTIONS = "code", "questions"

# The code panel's bodies a document holds are kept (at their indices) for the next one
# while they are below this many characters in all (every function of the engine is a
# few times that); past it a document starts afresh.
HELD_BODIES_MAX_CHARS = 400_000


def to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class Sender:
    """Makes the state's document and answers the page's `steps` (see the module)."""

    def __init__(self, state: SimulatorState) -> None:
        self.state = state
        self._parts: dict[str, Render | None] = {}  # part -> a view's render (None: code...)
        self.decks: dict[str, dict[str, Any]] = {}  # per view: the pages the page holds
        self.sent: dict[str, Any] = {}  # the document's parts (its code, bodies, questions)
        self.held: dict[str, list[int]] = {}  # timeline key -> [first, end) of the steps held
        self._timelines: tuple[Timeline, ...] = ()
        # (part, timeline, step) -> its page: a large timeline's steps asked one after
        # another share all but one step with the last answer
        self._pages: dict[tuple[str, int, int], str] = {}
        self._serial = 0  # one per document
        self._keep = True  # a document made outside a request keeps the page's position
        self.write = lambda _document: None  # into the page's `document_json` (connect)
        # Other timelines (a scenario, an edit, a playground's mode): a new document.
        state.param.watch(lambda *_: self.publish(), ["timeline"])

    def connect(self, page: Any, prebuilt: bool = False) -> None:
        """Write ``page``'s `document_json` now (``prebuilt``: see `publish`) and at each new
        set of timelines; answer its `steps` requests."""
        self.write = lambda document: setattr(page, "document_json", to_json(document))
        page.answer("steps", lambda request: self.steps(request.get("key"), request.get("step")))
        self.publish(keep=False, prebuilt=prebuilt)

    @property
    def views(self) -> list[str]:
        """The names of the views whose pages it sends."""
        return [part for part, render in self._parts.items() if render is not None]

    def add(self, part: str, render: Render | None = None) -> None:
        """A view's pages (``render``), or CODE or QUESTIONS."""
        self._parts[part] = render  # (its pages are made with the next document)

    @contextmanager
    def opening(self) -> Iterator[None]:
        """The document made meanwhile answers a request: it opens at its `at` (one is
        made at the end if the state's timeline stayed)."""
        serial, self._keep = self._serial, False
        try:
            yield
        finally:
            self._keep = True
        if self._serial == serial:
            self.publish(keep=False)

    def publish(self, keep: bool | None = None, prebuilt: bool = False) -> None:
        """A new document at the state's position (its timelines' pages, or a large one's
        around the step). ``prebuilt``: the page holds it (the static site's builder wrote
        it): only its head; no page made, nor any timeline but the open one, until asked."""
        state = self.state
        if state.timeline is None:
            return
        at, self._serial = self._at(), self._serial + 1
        if prebuilt:  # (its scenario and serial: no timeline named)
            self.write({**document_head(at, self._serial, {}, {}), "prebuilt": True})
            return
        if self._render_open_timelines() or not self.holds(*at):
            self._make(set(self._parts), at)
        lasts = state.lasts if all(map(sends_every_step, self._timelines)) else state.counted_lasts
        keep = self._keep if keep is None else keep
        head = document_head(at, self._serial, lasts, self.held, keep)
        self.write({**head, **self._sent(CODE, "bodies", QUESTIONS)})

    def anew(self, part: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """The reply to a pick that changed the part's pages: its pages anew, the steps the
        page holds (a large timeline's around the request's `key` and `step`)."""
        self._render_open_timelines()
        self._pages = {made: page for made, page in self._pages.items() if made[0] != part}
        key, step = request.get("key"), request.get("step")
        at = (key, step) if isinstance(key, str) and isinstance(step, int) else self._at()
        self._make({part}, at if self.holds(*at) else self._at())
        return {"views": {part: self.decks[part]}}

    def holds(self, key: str, step: int) -> bool:
        """Whether the last document (and the answers since) holds this position's pages."""
        first, end = self.held.get(key, (0, 0))
        return first <= step < end

    def page(self, view: str, key: str, step: int) -> str:
        """A view's page at this position as the page has it ("" if it has none)."""
        if view not in self.decks and self.state.timeline is not None:  # (not made yet)
            self._render_open_timelines()
            self._make({view}, self._at())
        deck = self.decks.get(view)
        order = deck["orders"].get(key, ()) if deck else ()
        index = order[step] if 0 <= step < len(order) else None
        return "" if deck is None or index is None else deck["pages"][index]

    def steps(self, key: Any, step: Any) -> dict[str, Any]:
        """The pages around ``step`` of timeline ``key`` (a large one's), as the page asks."""
        keys = {timeline_key(t): t for t in self._timelines}
        if key not in keys or not isinstance(step, int) or split_key(key)[0] != self.state.scenario:
            return {}  # a timeline since left, or a malformed request
        step = max(0, min(step, len(keys[key].steps) - 1))
        self._make(set(self._parts), (key, step))
        return {"serial": self._serial, "held": self.held, **self._sent(CODE, "bodies")}

    def _sent(self, *parts: str) -> dict[str, Any]:
        """Every view's pages and these parts of the document, as the page gets them."""
        views = {name: self.decks[name] for name in self.views}
        return {"views": views, **{name: self.sent[name] for name in parts if name in self.sent}}

    def _at(self) -> tuple[str, int]:
        return self.state.key, self.state.step

    def _render_open_timelines(self) -> bool:
        """The state's timelines become the ones whose pages are made (a prebuilt made
        none): whether they were not."""
        opened = self.state.scenario_timelines
        if [id(t) for t in opened] == [id(t) for t in self._timelines]:
            return False
        self._timelines, self._pages = opened, {}
        return True

    def _make(self, parts: set[str], at: tuple[str, int]) -> None:
        """Render ``parts`` of the open timelines: every step, or a large one's around
        ``at``."""
        views = {
            p: self._memo(p, r) for p, r in self._parts.items() if p in parts and r is not None
        }
        frames, bodies = self.sent.get(CODE, {}).get("frames", ()), self.sent.get("bodies", ())
        if sum(map(len, bodies)) > HELD_BODIES_MAX_CHARS:
            frames, bodies = (), ()
        made = bundle(
            self._timelines,
            views,
            at,
            code=CODE in parts,
            questions=QUESTIONS in parts,
            held=(frames, bodies),
        )
        self.decks.update(made["views"])
        for name in (CODE, "bodies", QUESTIONS):
            if name in made:
                self.sent[name] = made[name]
        if parts >= set(self._parts):  # (one part made anew holds the steps the others do)
            self.held = made["held"]
        # A large timeline's pages around the step are kept for the next answer; a small
        # one's every page is in the decks.
        near = range(at[1] - 1, at[1] + 2)
        large = not all(map(sends_every_step, self._timelines))
        self._pages = {
            made: page for made, page in self._pages.items() if large and made[2] in near
        }

    def _memo(self, part: str, render: Render) -> Render:
        def page(timeline: Timeline, step: int) -> str:
            made = (part, id(timeline), step)
            if made not in self._pages:
                self._pages[made] = render(timeline, step)
            return self._pages[made]

        return page
