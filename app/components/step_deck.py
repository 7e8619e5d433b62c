"""Every step's HTML sent once per scenario; steps and modes never leave the browser.

A timeline is immutable and a view is a pure function of (timeline, step), so
every step's HTML, for every mode of the open scenario, is rendered when the
scenario opens. Each view's StepDeck keeps its distinct pages in the browser.
The player (player.py) announces each position, a timeline key and a step
(position.js), and every deck swaps in its page there: no Python view re-renders, no HTML is
re-sent, no round trip is waited for (in Pyodide every model change costs
milliseconds of Panel bookkeeping, and a view is a dozen models).

A deck that does not hold the player's timeline (a new scenario still
arriving) shows its own `key` and `step` (those its pages were sent with) until
they agree.

A large timeline (a playground of thousands of blocks) would take tens of
seconds to render page by page: its deck holds only the pages around the shown step, and
Python sends the next ones when the step moves (base.py); until they arrive
the deck keeps its page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


# In an order: this step's page is not in the browser yet; the deck keeps showing what
# it shows until Python sends it (step_deck.js).
NOT_SENT = -1


@dataclass(frozen=True)
class Deck:
    """Distinct pages, and which page each step of each timeline shows."""

    pages: tuple[str, ...]
    orders: Mapping[str, tuple[int, ...]]  # timeline key -> index into pages, per step

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
        return self.pages[self.orders[key][step]]


class StepDeck(LeanComponent):
    pages = param.List(default=[], item_type=str, doc="Distinct HTML pages of the view")
    orders = param.Dict(default={}, doc="Timeline key -> index into pages, per step")
    key = param.String(default="", doc="The timeline to show until the player names one held")
    step = param.Integer(default=0, doc="The step to show until the player names one held")

    _esm = "step_deck.js"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.loaded: Deck | None = None  # what the last load sent

    def load(self, deck: Deck, key: str, step: int) -> None:
        """A new scenario: its pages and orders, and the position, in one update."""
        self.loaded = deck
        orders = {k: list(order) for k, order in deck.orders.items()}
        self.param.update(pages=list(deck.pages), orders=orders, key=key, step=step)

    def holds(self, key: str) -> bool:
        return key in self.orders

    def holds_page(self, key: str, step: int) -> bool:
        order = self.orders.get(key, [])
        return 0 <= step < len(order) and order[step] != NOT_SENT

    def page(self, key: str, step: int) -> str:
        """What the browser shows at this position (for tests)."""
        order = self.orders.get(key, [])
        return self.pages[order[step]] if self.holds_page(key, step) else ""
