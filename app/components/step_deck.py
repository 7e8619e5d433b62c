"""Every step's HTML sent once per scenario; steps and modes never leave the browser.

A timeline is immutable and a view is a pure function of (timeline, step), so
every step's HTML, for every mode of the open scenario, is rendered when the
scenario opens. What every view, the code panel and the questions send goes into
one bundle (Outbox), the player's one `bundle` parameter (player.py): an edit is
one model update, not one per view. Each view's StepDeck is a slot in the page:
the player announces each position with the bundle (position.js), and every
deck swaps in its view's page there: no Python view re-renders, no HTML is
re-sent, no round trip is waited for.

A large timeline (a playground of thousands of blocks) would take tens of
seconds to render page by page: its decks hold only the pages around the shown
step, and Python sends the next ones when the step moves (views/base.py); until
they arrive a deck keeps its page. A step whose page is not sent yet is null in
its order, as a code plan or a step's questions not sent yet are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import param

from app.components.esm import FileComponent


class LeanComponent(FileComponent):
    """A file-module component whose updates skip Panel's theme pass unless stylesheets change.

    Panel 1.9 recomputes a component's design (new stylesheet models) on every
    property change but uses the result only when `stylesheets` changed: about
    3 ms per change in Pyodide, for nothing.
    """

    def _update_properties(self, *events: param.parameterized.Event, doc: Any) -> dict[str, Any]:
        if any(event.name == "stylesheets" for event in events):
            return super()._update_properties(*events, doc=doc)
        return self._process_param_change(  # type: ignore[no-any-return]
            {event.name: event.new for event in events}
        )


# In an order: this step's page is not in the browser yet (JSON null); the deck keeps
# showing what it shows until Python sends it (step_deck.js).
NOT_SENT = None


@dataclass(frozen=True)
class Deck:
    """Distinct pages, and which page each step of each timeline shows."""

    pages: tuple[str, ...]
    orders: Mapping[str, tuple[int | None, ...]]  # timeline key -> index into pages, per step

    @classmethod
    def of(cls, per_timeline: Mapping[str, Sequence[str | None]]) -> Deck:
        """A step whose page is None is not sent (NOT_SENT): a large timeline's deck
        holds only the pages around the shown step (base.py)."""
        index: dict[str, int] = {}
        orders = {
            key: tuple(
                NOT_SENT if page is None else index.setdefault(page, len(index))
                for page in per_step
            )
            for key, per_step in per_timeline.items()
        }
        return cls(tuple(index), orders)

    def page(self, key: str, step: int) -> str:
        index = self.orders[key][step]
        return "" if index is None else self.pages[index]


def to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class Outbox:
    """The bundle being sent to the page: the position's part (player.py) and each view's
    pages, the code panel's and the questions' parts, each kept as JSON so that a part
    changed is encoded once. Every change writes, with ``write``, the parts the browser
    has not said it holds (``received``, from the player), numbered by `n`; the player
    merges them into what it holds. Within one hold Bokeh sends only the last write, so
    an edit is one model update, and a pick sends only its view's pages. Where the
    browser never answers (a page being built, a static copy being rendered) the writes
    carry the whole bundle."""

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self._write = write
        self._parts: dict[str, str] = {}
        self._views: dict[str, str] = {}
        self._written = 0
        self._unheld: dict[str, int] = {}  # part ("view:NAME": a view's) -> its last write

    def put(self, part: str, value: Any) -> None:
        self._parts[part] = to_json(value)
        self._send(part)

    def put_view(self, name: str, deck: Deck) -> None:
        self._views[name] = to_json({"pages": deck.pages, "orders": deck.orders})
        self._send("view:" + name)

    def received(self, written: int) -> None:
        """The browser holds every part up to write ``written``."""
        self._unheld = {part: n for part, n in self._unheld.items() if n > written}

    def _send(self, changed: str) -> None:
        if self._write is None:
            return
        self._written += 1
        self._unheld[changed] = self._written
        views = ",".join(
            f"{json.dumps(name)}:{text}"
            for name, text in self._views.items()
            if "view:" + name in self._unheld
        )
        parts = [f'"n":{self._written}', f'"views":{{{views}}}']
        parts += [f"{json.dumps(k)}:{v}" for k, v in self._parts.items() if k in self._unheld]
        self._write("{" + ",".join(parts) + "}")


class StepDeck(LeanComponent):
    """A view's slot: it shows its view's page of the bundle at the player's position."""

    view = param.String(default="", constant=True, doc="The view's name in the bundle")

    _esm = "step_deck.js"

    def __init__(self, outbox: Outbox | None = None, **params: Any) -> None:
        super().__init__(**params)
        self._outbox = outbox or Outbox()
        self.loaded: Deck | None = None  # what the last load sent
        self.orders: Mapping[str, Sequence[int | None]] = {}

    def load(self, deck: Deck) -> None:
        """A new scenario (or the rest of its pages): its pages and orders."""
        self.loaded = deck
        self.orders = deck.orders
        self._outbox.put_view(self.view, deck)

    @property
    def pages(self) -> tuple[str, ...]:
        return self.loaded.pages if self.loaded else ()

    def holds_page(self, key: str, step: int) -> bool:
        order = self.orders.get(key, [])
        return 0 <= step < len(order) and order[step] is not NOT_SENT

    def page(self, key: str, step: int) -> str:
        """What the browser shows at this position (for tests)."""
        assert self.loaded is not None or not self.holds_page(key, step)
        return self.loaded.page(key, step) if self.loaded and self.holds_page(key, step) else ""
