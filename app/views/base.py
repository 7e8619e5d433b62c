"""A view = one HTML pane, built once, whose `.object` is replaced when the step changes.

Only the narration and the code panel carry the step number (`data-step`): a
view whose HTML is the same as at the last step sends nothing, and every view
that did change arrives in the same patch as the narration (one `hold`).
"""

from __future__ import annotations

import html

import panel as pn
import param

from app.errors import logged
from app.state import SimulatorState
from app.theme import CSS
from app.views.html_pane import StepHTML
from engine.timeline import Timeline


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


class StepView(pn.viewable.Viewer):
    """Renders `render(timeline, step)`; subclasses only write that pure function."""

    state = param.ClassSelector(class_=SimulatorState)

    stylesheet: str = CSS
    css_class: str = ""

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._pane = StepHTML(
            "",
            sizing_mode="stretch_width",
            stylesheets=[self.stylesheet],
            css_classes=[self.css_class] if self.css_class else [],
            margin=0,
        )
        self._last: str | None = None
        self.state.param.watch(self._refresh, ["timeline", "step"])
        self._refresh()

    @staticmethod
    def render(timeline: Timeline, step: int) -> str:
        raise NotImplementedError

    @logged
    def _refresh(self, *_: object) -> None:
        assert self.state.timeline is not None
        html = self.render(self.state.timeline, self.state.step)
        # An unchanged pane sends nothing to the browser: no re-render, no re-layout.
        if html == self._last:
            return
        self._last = html
        self._pane.object = html
        visible = bool(html)  # an empty render hides the view (e.g. no CPU offload)
        if self._pane.visible != visible:
            self._pane.visible = visible

    @property
    def html(self) -> str:
        """What the browser is showing (for tests)."""
        return str(self._pane.object)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._pane
