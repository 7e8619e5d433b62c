"""The code panel's viewer: the engine's own source of the functions that ran at this
step (planned in app/render/code_plan.py), the step's focus function or the one picked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.data.timelines import timeline_key
from app.render.code_plan import CodeParts, code_parts, style_defs
from app.style.theme import CSS
from app.views.base import PagePart
from app.views.sender import CODE

# Pygments first, so the app's own rules (backgrounds of ran lines) win.
CODE_CSS = style_defs(".code") + CSS + ".code { background: transparent; }"


class CodeView(PagePart):
    """The code that ran at this step: the step's focus function, or the one picked
    (the page's code panel asks for it: `code`)."""

    stylesheets = (CODE_CSS,)

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._picked: dict[str, Any] = {}  # the last function picked, as answered
        self.page.answer("code", self._answer_pick)
        self.sender.add(CODE)

    def _answer_pick(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The learner picked a function other than the step's focus: its code."""
        held = {timeline_key(t): t for t in self.state.scenario_timelines}
        try:
            key, step, index = str(request["key"]), int(request["step"]), int(request["index"])
            timeline = held[key]
        except (TypeError, ValueError, KeyError):
            return {}  # a stale or malformed pick: nothing to show
        if not (0 <= step < len(timeline.steps) and 0 <= index < len(timeline.steps[step].code)):
            return {}
        parts = code_parts(timeline, step, index)
        self._picked = {
            "key": key,
            "step": step,
            "index": index,
            "frame": parts.frame,
            "body": parts.body,
            "ran": list(parts.ran),
            "current": parts.current,
        }
        return {"picked": self._picked}

    def pick(self, index: int) -> dict[str, Any]:
        """Pick a function of the current step, as the browser's picker does."""
        state = self.state
        return self.page.request(
            {"ask": "code", "key": state.key, "step": state.step, "index": index}
        )

    @property
    def parts(self) -> CodeParts:
        """What the browser shows at the current step (for tests)."""
        timeline, step = self.state.timeline, self.state.step
        assert timeline is not None
        picked = self._picked
        here = (picked.get("key"), picked.get("step")) == (self.state.key, step)
        index = picked.get("index") if here else None
        return code_parts(timeline, step, index)

    @property
    def html(self) -> str:
        return self.parts.html
