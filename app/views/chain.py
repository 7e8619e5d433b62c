"""The panel of app/render/chain.py, in Panel."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.data.timelines import timeline_key
from app.host.runtime import in_pyodide
from app.render.chain import NONE, Picked, render_chain_picked, render_hash_cost
from app.render.engines import per_engine
from app.style.theme import CSS
from app.views.base import TERM_CSS, PagePart
from engine.lab.play.vllm.timeline import Timeline
from engine.lab.shared.hash_cost import measure_hash_cost


class ChainView(PagePart):
    """The chain's deck: every step's page, in every mode, with its pickers on the pair
    shown, so stepping never waits for Python and Python never follows a step. A pick
    (from the browser, per timeline) re-renders that timeline's pages."""

    part = "chain"
    stylesheets = (CSS, TERM_CSS)

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        # The learner's picks, per timeline key: they name that timeline's requests.
        self._picked: dict[str, Picked] = {}
        self.page.answer("chain", self._answer_pick)
        self.page.answer("measure", self._answer_measure)
        self.sender.add(self.part, per_engine(self._page))  # none on SGLang

    def _page(self, timeline: Timeline, step: int) -> str:
        return render_chain_picked(
            timeline, step, self._picked.get(timeline_key(timeline), (None, None))
        )

    def _answer_pick(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The learner picked a request (or the one to compare with): the chain's pages
        anew, in every step of that timeline."""
        key, primary, other = (request.get(name) for name in ("key", "primary", "other"))
        keys = {timeline_key(t) for t in self.state.scenario_timelines}
        if key not in keys:  # a pick made on a scenario since left
            return {}
        # "(none)" is a pick too: NONE, unlike None, does not follow the newest.
        self._picked = {k: v for k, v in self._picked.items() if k in keys}
        self._picked[str(key)] = (str(primary or "") or None, str(other or "") or NONE)
        return self.sender.anew(self.part, request)

    def pick(self, primary: str | None, other: str | None = None) -> dict[str, Any]:
        """Pick in the open timeline, as the browser's pickers do."""
        key = self.state.key
        return self.page.request({"ask": "chain", "key": key, "primary": primary, "other": other})

    def _answer_measure(self, _request: Mapping[str, Any]) -> dict[str, Any]:
        where = "in your browser's Python (Pyodide)" if in_pyodide() else "on this server"
        return {"html": render_hash_cost(measure_hash_cost(), where)}
