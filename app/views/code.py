"""The code panel's viewer: the engine's own source of the functions that ran at this
step (planned in app/render/code_plan.py), the step's focus function or the one picked."""

from __future__ import annotations

import panel as pn
import param

from app.bundle import sent_steps
from app.components.code_panel import CodePanel
from app.components.step_deck import Outbox
from app.errors import logged
from app.render.code import style_defs
from app.render.code_plan import CodeParts, CodePlan, code_parts
from app.state import SimulatorState
from app.theme import CSS
from app.timelines import timeline_key
from app.views import base
from app.views.base import Follower, later, still_open

# Pygments first, so the app's own rules (backgrounds of ran lines) win.
CODE_CSS = style_defs(".code") + CSS + ".code { background: transparent; }"
# The bodies the browser holds are kept for the next scenario or edit while they are
# below this many characters in all (every function of the engine is a few times that),
# so an edit's plan sends no function's source again; past it they start afresh.
HELD_BODIES_MAX_CHARS = 400_000


class CodeView(pn.viewable.Viewer):
    """The code that ran at this step: the step's focus function, or the one picked."""

    state = param.ClassSelector(class_=SimulatorState)
    outbox = param.ClassSelector(class_=Outbox, doc="The player's bundle (Controls.outbox)")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._panel = CodePanel(
            outbox=self.outbox, sizing_mode="stretch_width", stylesheets=[CODE_CSS], margin=0
        )
        self._follower = Follower(self._panel, self._send_plan)
        self.state.param.watch(self._on_timeline, ["timeline", "step"])
        self._panel.param.watch(self._on_pick, "pick")
        self._on_timeline()

    @logged
    def _on_timeline(self, *_: object) -> None:
        # A step needs nothing once every step's code is held; before (its first plan holds
        # the steps around the one shown: _send_plan), a step past them is planned anew.
        self._follower.follow(self.state)

    def _send_plan(self) -> None:
        """A new scenario: the code of the shown step and its neighbours at once, then
        (REST_AFTER_S later, as the views' other pages: base.fill_deck) every step's code
        of every mode. Where nothing would reach the browser in between, all at once."""
        key, step = self.state.key, self.state.step
        timelines = self.state.scenario_timelines
        keyed = {timeline_key(t): t for t in timelines}
        held = tuple(self._panel.bodies)
        if sum(map(len, held)) > HELD_BODIES_MAX_CHARS:
            held = ()
        if not base.defers_rest():  # (looked up here: tests stand in for a server)
            self._send(CodePlan.of(keyed, held_bodies=held))
            self._forget_pick()
            return
        first = CodePlan.of(
            keyed,
            lambda t: sent_steps(t, (key, step), around_only=True),
            held_bodies=held,
        )
        self._send(first)
        self._forget_pick()

        def send_the_rest() -> None:
            if not still_open(self.state, timelines):
                return  # another scenario or mode since: its own plan is on its way
            self._send(CodePlan.of(keyed, after=first))

        later(send_the_rest)

    def _forget_pick(self) -> None:
        if self._panel.picked:  # (a model update only when there was one)
            self._panel.picked = {}

    def _send(self, plan: CodePlan) -> None:
        self._panel.load(list(plan.frames), list(plan.bodies), plan.as_dicts())

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
