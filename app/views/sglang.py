"""What the views share about SGLang's timelines: the stylesheet of its marks, and
whether the open timeline is SGLang's."""

from __future__ import annotations

from app.page.stylesheets import stylesheet
from app.page.theme import CSS
from app.views.state import SimulatorState
from engine.lab.play.sglang.timeline import SGLangTimeline

# The theme, then SGLang's own marks (the radix tree, the KV slots, its requests and
# events): on every view that renders one of them.
SGLANG_CSS = CSS + stylesheet("app.views", "radix_tree.css")


def on_sglang(state: SimulatorState | None) -> bool:
    """Whether the state shows an SGLang timeline (a view with pickers of its own hides
    them there: the hash chain's, the prefill calculator's)."""
    assert state is not None  # a view's `state` parameter (never None once made)
    return isinstance(state.timeline, SGLangTimeline)
