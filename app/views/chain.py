"""The panel of app/render/chain.py, in Panel."""

from __future__ import annotations

import panel as pn
import param

from app.components.chain_deck import ChainDeck
from app.data.timelines import timeline_key
from app.host.errors import logged
from app.host.runtime import in_pyodide
from app.render.chain import NONE, Picked, render_chain_picked
from app.render.engines import per_engine
from app.render.hash_cost import render_hash_cost
from app.style.theme import CSS
from app.views.base import TERM_CSS, sender_of
from app.views.sender import Sender
from app.views.state import SimulatorState
from engine.lab.play.vllm.timeline import Timeline
from engine.lab.shared.hash_cost import measure_hash_cost


class ChainView(pn.viewable.Viewer):
    """The chain's deck: every step's page, in every mode, with its pickers on the pair
    shown, so stepping never waits for Python and Python never follows a step. A pick
    (from the browser, per timeline) re-renders that timeline's pages."""

    state = param.ClassSelector(class_=SimulatorState)
    sender = param.ClassSelector(class_=Sender, doc="The App's one sender")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._deck = ChainDeck(
            view="chain", sizing_mode="stretch_width", stylesheets=[CSS, TERM_CSS], margin=0
        )
        # The learner's picks, per timeline key: they name that timeline's requests.
        self._picked: dict[str, Picked] = {}
        self._deck.param.watch(self._on_pick, "pick")
        self._deck.param.watch(self._on_measure, "measure")
        sender_of(self).add("chain", per_engine(self._page))  # none on SGLang

    def _page(self, timeline: Timeline, step: int) -> str:
        return render_chain_picked(
            timeline, step, self._picked.get(timeline_key(timeline), (None, None))
        )

    @logged
    def _on_pick(self, *_: object) -> None:
        key, primary, other = (*self._deck.pick, None, None, None)[:3]
        keys = {timeline_key(t) for t in self.state.scenario_timelines}
        if key not in keys:  # a pick made on a scenario since left
            return
        # "(none)" is a pick too: NONE, unlike None, does not follow the newest.
        self._picked = {k: v for k, v in self._picked.items() if k in keys}
        self._picked[key] = (primary or None, other or NONE)
        self.sender.resend("chain")

    @logged
    def _on_measure(self, *_: object) -> None:
        where = "in your browser's Python (Pyodide)" if in_pyodide() else "on this server"
        self._deck.measured = render_hash_cost(measure_hash_cost(), where)

    @property
    def html(self) -> str:
        return self.sender.page("chain", self.state.key, self.state.step)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._deck
