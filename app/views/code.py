"""The code panel's viewer: the engine's own source of the functions that ran at this
step (planned in app/render/code_plan.py), the step's focus function or the one picked."""

from __future__ import annotations

import panel as pn
import param

from app.components.code_panel import CodePanel
from app.data.timelines import timeline_key
from app.host.errors import logged
from app.render.code import style_defs
from app.render.code_plan import CodeParts, code_parts
from app.style.theme import CSS
from app.views.base import sender_of
from app.views.sender import CODE, Sender
from app.views.state import SimulatorState

# Pygments first, so the app's own rules (backgrounds of ran lines) win.
CODE_CSS = style_defs(".code") + CSS + ".code { background: transparent; }"


class CodeView(pn.viewable.Viewer):
    """The code that ran at this step: the step's focus function, or the one picked."""

    state = param.ClassSelector(class_=SimulatorState)
    sender = param.ClassSelector(class_=Sender, doc="The App's one sender")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._panel = CodePanel(sizing_mode="stretch_width", stylesheets=[CODE_CSS], margin=0)
        self._panel.param.watch(self._on_pick, "pick")
        sender_of(self).add(CODE, told=self._forget_pick)

    def _forget_pick(self, _plan: object, _whole: bool, first: bool) -> None:
        """A new plan: the pick answered was of the plan before."""
        if first and self._panel.picked:  # (a model update only when there was one)
            self._panel.picked = {}

    @logged
    def _on_pick(self, *_: object) -> None:
        """The learner picked a function other than the step's focus: send its code."""
        held = {timeline_key(t): t for t in self.state.scenario_timelines}
        try:
            key, step, index = self._panel.pick
            timeline = held[key]
            step, index = int(step), int(index)
        except (TypeError, ValueError, KeyError):
            return  # a stale or malformed pick: nothing to show
        if not (0 <= step < len(timeline.steps) and 0 <= index < len(timeline.steps[step].code)):
            return
        parts = code_parts(timeline, step, index)
        self._panel.picked = {
            "key": key,
            "step": step,
            "index": index,
            "frame": parts.frame,
            "body": parts.body,
            "ran": list(parts.ran),
            "current": parts.current,
        }

    def pick(self, index: int) -> None:
        """Pick a function of the current step, as the browser's picker does."""
        self._panel.pick = [self.state.key, self.state.step, index]

    @property
    def parts(self) -> CodeParts:
        """What the browser shows at the current step (for tests)."""
        timeline, step = self.state.timeline, self.state.step
        assert timeline is not None
        picked = self._panel.picked
        here = (picked.get("key"), picked.get("step")) == (self.state.key, step)
        index = picked.get("index") if here else None
        return code_parts(timeline, step, index)

    @property
    def html(self) -> str:
        return self.parts.html

    def __panel__(self) -> pn.viewable.Viewable:
        return self._panel
