"""The panel of app/render/prefill.py, in Panel."""

from __future__ import annotations

import panel as pn
import param

from app.components import at_once
from app.components.step_deck import StepDeck
from app.data.prefill_inputs import FIELDS, model_texts, parse_inputs, seed_texts
from app.host.errors import logged
from app.page.theme import CSS, FOCUS_RING
from app.render.engines import per_engine
from app.render.prefill import OWN_INPUTS, THE_EXAMPLE, follow, follow_page, render_prefill
from app.views.base import sender_of
from app.views.sender import Sender
from app.views.sglang import on_sglang
from app.views.state import SimulatorState
from engine.lab.play.vllm.snapshot import Snapshot
from engine.lab.play.vllm.timeline import Timeline


class PrefillView(pn.viewable.Viewer):
    """The calculator: it follows the step (a StepDeck, so it steps in the browser too)
    until the learner types; then it shows their inputs at every step."""

    state = param.ClassSelector(class_=SimulatorState)
    sender = param.ClassSelector(class_=Sender, doc="The App's one sender")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.inputs = {
            name: at_once.TextInput(label=label, width=150, margin=(0, 6, 4, 0))
            for name, label in FIELDS.items()
        }
        self.from_step = pn.widgets.Button(
            label="This step's request", margin=(4, 6, 4, 0), stylesheets=[FOCUS_RING]
        )
        self.seed = pn.widgets.Button(
            label="Agent-prompt example (2,200 / 2,000)",
            margin=(4, 6, 4, 0),
            stylesheets=[FOCUS_RING],
        )
        self._deck = StepDeck(
            view="prefill",
            sizing_mode="stretch_width",
            stylesheets=[CSS],
            margin=0,
        )
        self._follow = True  # follow the step's request until the learner types
        self._base = model_texts()  # the fields a followed request leaves as they were
        self._source = ""  # where the learner's own inputs come from
        self._own = ""  # their page, the same at every step
        self._updating = False
        fields = pn.FlexBox(*self.inputs.values(), flex_wrap="wrap", margin=0)
        # They wrap on a phone, as the fields do: side by side they are wider than 390 px.
        buttons = pn.FlexBox(self.from_step, self.seed, flex_wrap="wrap", margin=0)
        self._layout = pn.Column(self._deck, fields, buttons, sizing_mode="stretch_width", margin=0)
        for widget in self.inputs.values():
            widget.param.watch(self._on_edit, "value")
        self.from_step.on_click(self._on_from_step)
        self.seed.on_click(self._on_seed)
        self.state.param.watch(self._on_step, ["timeline", "step"])
        self._fill(self._base)
        sender_of(self).add("prefill", per_engine(self._page))
        self._on_step()

    def _fill(self, texts: dict[str, str]) -> None:
        self._updating = True
        try:
            for name, text in texts.items():
                self.inputs[name].value = text
        finally:
            self._updating = False

    def _fill_from_step(self) -> None:
        """The fields from the step's request (vLLM's: SGLang's steps have no
        num_cached_tokens, and the calculator hides there)."""
        snapshot = self.state.current.snapshot
        if isinstance(snapshot, Snapshot):
            self._fill(follow(snapshot, self._base)[0])

    def _texts(self) -> dict[str, str]:
        return {name: w.value or "" for name, w in self.inputs.items()}

    def _page(self, timeline: Timeline, step: int) -> str:
        """Followed, or the learner's inputs at every step."""
        return follow_page(timeline, step, self._base) if self._follow else self._own

    def _show(self) -> None:
        if not self._follow:
            self._own = render_prefill(parse_inputs(self._texts()), self._source)
        self.sender.resend("prefill")

    @logged
    def _on_step(self, *_: object) -> None:
        # SGLang's timelines have no num_cached_tokens to follow: the calculator hides.
        self._layout.visible = not on_sglang(self.state)
        if self._follow:  # the fields show what the deck already shows
            self._fill_from_step()

    @logged
    def _on_edit(self, *_: object) -> None:
        if self._updating:
            return
        self._follow = False
        self._source = OWN_INPUTS
        self._show()

    @logged
    def _on_from_step(self, *_: object) -> None:
        self._follow = True
        self._base = self._texts()
        self._fill_from_step()
        self._show()

    @logged
    def _on_seed(self, *_: object) -> None:
        self._follow = False
        self._fill(seed_texts())
        self._source = THE_EXAMPLE
        self._show()

    @property
    def html(self) -> str:
        """What the browser shows at the current step (for tests)."""
        return self.sender.page("prefill", self.state.key, self.state.step)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
