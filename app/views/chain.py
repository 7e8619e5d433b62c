"""The panel of app/render/chain.py, in Panel."""

from __future__ import annotations

import param

from app.components.step_page import StepPage
from app.data.timelines import timeline_key
from app.host.errors import logged
from app.host.runtime import in_pyodide
from app.render.chain import NONE, Picked, render_chain_picked
from app.render.engines import per_engine
from app.render.hash_cost import render_hash_cost
from app.style.theme import CSS
from app.views.base import TERM_CSS, page_of, sender_of
from app.views.sender import Sender
from app.views.state import SimulatorState
from engine.lab.play.vllm.timeline import Timeline
from engine.lab.shared.hash_cost import measure_hash_cost


class ChainView(param.Parameterized):
    """The chain's deck: every step's page, in every mode, with its pickers on the pair
    shown, so stepping never waits for Python and Python never follows a step. A pick
    (from the browser, per timeline) re-renders that timeline's pages."""

    state = param.ClassSelector(class_=SimulatorState)
    sender = param.ClassSelector(class_=Sender, doc="The App's one sender")
    page = param.ClassSelector(class_=StepPage, doc="The stepping page")

    stylesheets = (CSS, TERM_CSS)

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        # The learner's picks, per timeline key: they name that timeline's requests.
        self._picked: dict[str, Picked] = {}
        page_of(self).param.watch(self._on_pick, "chain_pick")
        self.page.param.watch(self._on_measure, "measure")
        sender_of(self).add("chain", per_engine(self._page))  # none on SGLang

    def _page(self, timeline: Timeline, step: int) -> str:
        return render_chain_picked(
            timeline, step, self._picked.get(timeline_key(timeline), (None, None))
        )

    @logged
    def _on_pick(self, *_: object) -> None:
        key, primary, other = (*self.page.chain_pick, None, None, None)[:3]
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
        self.page.measured = render_hash_cost(measure_hash_cost(), where)

    @property
    def html(self) -> str:
        return self.sender.page("chain", self.state.key, self.state.step)
