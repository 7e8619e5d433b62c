"""The panel of app/render/chain.py, in Panel."""

from __future__ import annotations

import panel as pn
import param

from app.components import at_once
from app.components.step_deck import StepDeck
from app.host.errors import logged
from app.host.runtime import in_pyodide
from app.page.theme import CSS, FOCUS_RING
from app.render.chain import NONE, default_pair, render_chain
from app.render.engines import per_engine
from app.render.hash_cost import render_hash_cost
from app.views.base import TERM_CSS, sender_of
from app.views.sender import Sender
from app.views.sglang import on_sglang
from app.views.state import SimulatorState
from engine.lab.play.vllm.timeline import Timeline
from engine.lab.shared.hash_cost import measure_hash_cost


class ChainView(pn.viewable.Viewer):
    """Two pickers (the request, and one to compare with) over the chain's StepDeck.

    The deck holds the chain of every step, in every mode, for the learner's
    picks on the open timeline (or, where a pick is absent at a step, the newest
    requests), so stepping never waits for Python; a pick re-renders the deck.
    """

    state = param.ClassSelector(class_=SimulatorState)
    sender = param.ClassSelector(class_=Sender, doc="The App's one sender")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        select = {"width": 130, "margin": (0, 8, 6, 0)}
        self._primary = at_once.Select(label="Request", **select)
        self._other = at_once.Select(label="Compare with", **select)
        self._deck = StepDeck(
            view="chain",
            sizing_mode="stretch_width",
            stylesheets=[CSS, TERM_CSS],
            margin=0,
        )
        self._pickers = pn.Row(self._primary, self._other, margin=0)
        # The chapter's "measure the hashing cost itself", in this page's own Python.
        self._measure = pn.widgets.Button(
            label="Measure the hashing cost here", margin=(8, 0, 4, 0), stylesheets=[FOCUS_RING]
        )
        self._measured = pn.pane.HTML(
            "", stylesheets=[CSS, TERM_CSS], sizing_mode="stretch_width", margin=0
        )
        self._measure.on_click(self._on_measure)
        self._layout = pn.Column(
            self._pickers,
            self._deck,
            self._measure,
            self._measured,
            sizing_mode="stretch_width",
            margin=0,
        )
        # The learner's picks; None follows the newest requests.
        self._picked: tuple[str | None, str | None] = (None, None)
        self._ids: tuple[str, ...] | None = None
        self._updating = False
        self._timeline = sender_of(self).state.timeline  # the one the picks are of
        self.sender.add("chain", per_engine(self._page))  # none on SGLang
        self.state.param.watch(self._on_step, ["timeline", "step"])
        self._primary.param.watch(self._on_pick, "value")
        self._other.param.watch(self._on_pick, "value")
        self._on_step()

    def _pair(self, timeline: Timeline, step: int) -> tuple[str | None, str | None]:
        """The pair shown: the learner's picks on the open timeline, else the newest."""
        snapshot = timeline.steps[step].snapshot
        ids = {r.request_id for r in snapshot.requests}
        auto_a, auto_b = default_pair(snapshot)
        picked = self._picked if timeline is self.state.timeline else (None, None)
        a = picked[0] if picked[0] in ids else auto_a
        if picked[1] is not None:
            b = picked[1] if picked[1] in ids and picked[1] != a else None
        else:
            b = auto_b if auto_b != a else None
        return a, b

    def _page(self, timeline: Timeline, step: int) -> str:
        return render_chain(timeline, step, *self._pair(timeline, step))

    @logged
    def _on_step(self, *_: object) -> None:
        if self.state.timeline is not self._timeline:
            self._timeline = self.state.timeline
            if self._picked != (None, None):  # picks name the old timeline's requests
                self._picked = (None, None)
                self.sender.resend("chain")
        # SGLang's timelines have no hash chain: the pickers hide with the empty deck.
        self._layout.visible = not on_sglang(self.state)
        if not self._layout.visible:
            return
        snapshot = self.state.current.snapshot
        ids = tuple(r.request_id for r in snapshot.requests)
        timeline = self.state.timeline
        assert timeline is not None  # (state.current answered above)
        a, b = self._pair(timeline, self.state.step)
        self._updating = True  # the pickers' own events must not render again
        try:
            if ids != self._ids:  # options only change when a request arrives
                self._ids = ids
                self._primary.options = list(ids)
                self._other.options = {"(none)": NONE, **{i: i for i in ids}}
                self._pickers.visible = bool(ids)
            if self._primary.value != a:
                self._primary.value = a
            if self._other.value != (b or NONE):
                self._other.value = b or NONE
        finally:
            self._updating = False

    @logged
    def _on_pick(self, *_: object) -> None:
        if self._updating:
            return
        # "(none)" is a pick too: NONE, unlike None, does not follow the newest.
        self._picked = (self._primary.value, self._other.value or NONE)
        self.sender.resend("chain")
        self._on_step()  # puts the pickers back on the pair if it was refused

    @logged
    def _on_measure(self, *_: object) -> None:
        where = "in your browser's Python (Pyodide)" if in_pyodide() else "on this server"
        self._measured.object = render_hash_cost(measure_hash_cost(), where)

    @property
    def html(self) -> str:
        return self.sender.page("chain", self.state.key, self.state.step)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
