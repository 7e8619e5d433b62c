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
from app.render.engines import AnyTimeline as Timeline  # either engine's
from app.state import SimulatorState
from app.theme import CSS
from app.timelines import timeline_key
from app.views import base
from app.views.base import Follower

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
        self._follower = Follower(self._panel.holds_page, self._send_plan)
        self.state.param.watch(self._on_timeline, ["timeline", "step"])
        self._panel.param.watch(self._on_pick, "pick")
        self._on_timeline()

    @logged
    def _on_timeline(self, *_: object) -> None:
        # A step needs nothing once every step's code is held; before (its first plan holds
        # the steps around the one shown: _send_plan), a step past them is planned anew.
        self._follower.follow(self.state)

    def _send_plan(self) -> None:
        """A new scenario: the code of the shown step and its neighbours, then every step's
        of every mode (base.first_then_rest, as the views' pages)."""
        key, step = self.state.key, self.state.step
        keyed = {timeline_key(t): t for t in self.state.scenario_timelines}
        held = tuple(self._panel.bodies)
        if sum(map(len, held)) > HELD_BODIES_MAX_CHARS:
            held = ()
        first: list[CodePlan] = []

        def send_first(around_only: bool) -> bool:
            def around(timeline: Timeline) -> range:
                return sent_steps(timeline, (key, step), around_only=True)

            first.append(CodePlan.of(keyed, around if around_only else None, held_bodies=held))
            self._send(first[0])
            self._forget_pick()
            return around_only

        base.first_then_rest(
            self.state, send_first, lambda: self._send(CodePlan.of(keyed, after=first[0]))
        )

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
