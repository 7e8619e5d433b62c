"""The panel of app/render/narration.py: every step of the timeline, shown through a
StepDeck; on the full page the last step offers the next scenario on the path."""

from __future__ import annotations

from app import timelines
from app.render.narration import render_narration
from app.render.start_page import next_on_path
from app.views.base import StepView, fill_deck
from engine.lab.timeline import Timeline


def render_on_path(timeline: Timeline, step: int) -> str:
    """The narration, and at the last step a link to the next scenario on the path."""
    following = next_on_path(timeline.scenario)
    title = timelines.titles()[following] if following else ""
    return render_narration(timeline, step, (following, title) if following else None)


class NarrationView(StepView):
    render = staticmethod(render_narration)

    def _render_deck(self) -> None:
        # The embed stays on its one scenario (the write-up's figure): no way on.
        fill_deck(
            self._deck, self.render if self.compact else render_on_path, self.state, self._loaded
        )
