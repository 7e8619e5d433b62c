"""The panel of app/render/narration.py: every step of the timeline, shown through a
StepDeck; on the full page the last step offers the next scenario on the path."""

from __future__ import annotations

from app.data.bundle import Render
from app.render.narration import render_narration, render_narration_on_path
from app.views.base import StepView


class NarrationView(StepView):
    render = staticmethod(render_narration)

    def pages(self) -> Render:
        # The embed stays on its one scenario (the write-up's figure): no way on.
        return self.render if self.compact else render_narration_on_path
