"""The panel of app/render/prefill.py, in Panel."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.render.engines import per_engine
from app.render.prefill import (
    OWN_INPUTS,
    THE_EXAMPLE,
    follow_page,
    model_texts,
    parse_inputs,
    render_prefill,
)
from app.style.theme import CSS
from app.views.base import PagePart
from engine.lab.play.vllm.timeline import Timeline

# An act of the learner's (prefill_deck.js) -> where the numbers come from.
SOURCES = {"own": OWN_INPUTS, "example": THE_EXAMPLE}


class PrefillView(PagePart):
    """The calculator: it follows the step (each step's page and fields are in the
    browser) until the learner types or picks the example; then it shows their inputs at
    every step, until "This step's request" follows the steps again."""

    part = "prefill"
    stylesheets = (CSS,)

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._follow = True  # follow the step's request until the learner types
        self._base = model_texts()  # the fields a followed request leaves as they were
        self._own = ""  # the learner's page, the same at every step
        self.page.answer("prefill", self._answer_act)
        self.sender.add(self.part, per_engine(self._page))

    def _page(self, timeline: Timeline, step: int) -> str:
        """Followed, or the learner's inputs at every step."""
        return follow_page(timeline, step, self._base) if self._follow else self._own

    def _answer_act(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The learner typed, picked the example, or followed the step's request again:
        the calculator's pages anew."""
        what, texts = request.get("what"), request.get("texts")
        if not isinstance(texts, dict) or what not in {"step", *SOURCES}:
            return {}
        texts = {name: str(texts.get(name, "")) for name in self.page.prefill_labels}
        self._follow = what == "step"
        if self._follow:
            self._base = texts
        else:
            self._own = render_prefill(parse_inputs(texts), SOURCES[str(what)], texts)
        return self.sender.anew(self.part, request)

    def act(self, what: str, texts: Mapping[str, str]) -> dict[str, Any]:
        """Type, pick the example or follow the step, as the browser's calculator does."""
        return self.page.request({"ask": "prefill", "what": what, "texts": dict(texts)})
