"""Every step's HTML sent once per timeline; the step itself never leaves the browser.

A timeline is immutable and a view is a pure function of (timeline, step), so
every step's HTML is rendered when the timeline opens. Each view's StepDeck
keeps its distinct pages in the browser. The step controls (player_bar.py)
announce each step on a page-wide channel, and every deck swaps in its page
there: no Python view re-renders, no HTML is re-sent, no round trip is waited
for. In Pyodide every model change costs milliseconds of Panel bookkeeping,
and a step once changed a dozen models (about 100 ms from click to page).

The timeline `key` ties decks to the channel: a deck whose pages are for
another timeline (a new one still arriving) shows its own `step` until they agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import param
from panel.custom import JSComponent

from engine.timeline import Timeline

# The page-wide channel: the player writes {key, step} here and fires STEP_EVENT.
STEP_CHANNEL_JS = """
const STEP_EVENT = 'pcl-step'
function announce(key, step) {
  globalThis.__pclStep = { key, step }
  document.dispatchEvent(new CustomEvent(STEP_EVENT))
}
function channelStep(model) {
  const channel = globalThis.__pclStep
  return channel && channel.key === model.key ? channel.step : model.step
}
function onStep(model, callback) {
  document.addEventListener(STEP_EVENT, callback)
  model.on('remove', () => document.removeEventListener(STEP_EVENT, callback))
}
"""

_DECK_ESM = (
    STEP_CHANNEL_JS
    + """
export function render({ model, view }) {
  const host = document.createElement('div')
  let shown = null
  function show() {
    const index = model.order[channelStep(model)]
    const page = index === undefined ? '' : model.pages[index]
    if (page === shown) { return }
    shown = page
    host.innerHTML = page
    // An empty page hides the whole component, margins included.
    if (view && view.el) { view.el.style.display = page ? '' : 'none' }
  }
  model.on(['pages', 'order', 'key'], () => { shown = null; show() })
  model.on('step', show)
  onStep(model, show)
  show()
  return host
}
"""
)


def timeline_key(timeline: Timeline) -> str:
    return f"{timeline.scenario}/{timeline.mode}"


class LeanComponent(JSComponent):
    """A JSComponent whose updates skip Panel's theme pass unless stylesheets change.

    Panel 1.9 recomputes a component's design (new stylesheet models) on every
    property change but uses the result only when `stylesheets` changed: about
    3 ms per change in Pyodide, for nothing.
    """

    def _update_properties(self, *events: param.parameterized.Event, doc: Any) -> dict[str, Any]:
        if any(event.name == "stylesheets" for event in events):
            return super()._update_properties(*events, doc=doc)  # type: ignore[no-any-return]
        return self._process_param_change(  # type: ignore[no-any-return]
            {event.name: event.new for event in events}
        )


@dataclass(frozen=True)
class Deck:
    """Distinct pages, and which page each step shows."""

    pages: tuple[str, ...]
    order: tuple[int, ...]

    @classmethod
    def of(cls, per_step: Sequence[str]) -> Deck:
        index: dict[str, int] = {}
        order = tuple(index.setdefault(page, len(index)) for page in per_step)
        return cls(tuple(index), order)

    def page(self, step: int) -> str:
        return self.pages[self.order[step]]


class StepDeck(LeanComponent):
    pages = param.List(default=[], item_type=str, doc="Distinct HTML pages of the view")
    order = param.List(default=[], item_type=int, doc="Index into pages, per step")
    key = param.String(default="", doc="The timeline the pages are for")
    step = param.Integer(default=0, doc="The step to show until the channel has this key")

    _esm = _DECK_ESM

    def show(self, deck: Deck, key: str, step: int) -> None:
        """A new timeline: its pages, order and key, and the step, in one update."""
        self.param.update(pages=list(deck.pages), order=list(deck.order), key=key, step=step)

    def page(self, step: int) -> str:
        """What the browser shows at this step (for tests)."""
        return self.pages[self.order[step]] if 0 <= step < len(self.order) else ""
