"""The panel of app/render/narration.py: every step of the timeline, shown through a
StepDeck; on the full page the last step offers the next scenario on the path."""

from __future__ import annotations

from app.render.narration import render_narration, render_narration_on_path
from app.views.base import StepView, fill_deck


class NarrationView(StepView):
    render = staticmethod(render_narration)

    def _render_deck(self) -> None:
        # The embed stays on its one scenario (the write-up's figure): no way on.
        render = self.render if self.compact else render_narration_on_path
        fill_deck(self._deck, render, self.state, self._loaded)
