"""Widgets whose changes in the browser reach Python at once on `panel serve`.

On a server Panel holds every change from the browser for 50 ms (``_debounce``)
before running the watchers, to gather a burst of changes into one. Each lab knob change
waited those 50 ms for nothing: the app already coalesces a
burst (a change that arrives while Python is busy joins the one being processed) and
makes stale work give way (app/views/sender.py). A change listed in
``_priority_changes`` is run on the next tick instead. In Pyodide there is no
server session and changes were never held.
"""

from __future__ import annotations

from typing import Any, ClassVar

import panel as pn
import param

from app.style.stylesheets import stylesheet
from app.style.theme import FOCUS_RING

WRAPPING_LABELS = stylesheet("app.components", "at_once.css")


class _AtOnce:
    _priority_changes: ClassVar[list[str]] = ["value", "value_input"]

    def __init__(self, **params: Any) -> None:
        params["stylesheets"] = [WRAPPING_LABELS, FOCUS_RING, *params.get("stylesheets", [])]
        super().__init__(**params)


class IntInput(_AtOnce, pn.widgets.IntInput):
    pass


class Select(_AtOnce, pn.widgets.Select):
    pass


class _BoxGroup(_AtOnce, pn.widgets.CheckBoxGroup):
    pass


class Checkbox(pn.viewable.Viewer):
    """A checkbox whose words name it: Panel's CheckBoxGroup of one box, which sits inside
    its <label> (Bokeh's Checkbox puts its text beside the box, not tied to it, so a screen
    reader, and Playwright's get_by_role, found a checkbox with no name). `value` and
    `label` as a Checkbox's."""

    value = param.Boolean(default=False)
    label = param.String(default="")

    def __init__(self, **params: Any) -> None:
        layout = {k: params.pop(k) for k in ("sizing_mode", "width", "margin") if k in params}
        super().__init__(**params)
        self._group = _BoxGroup(options=[self.label], value=self._checked(), **layout)
        self._group.param.watch(lambda event: setattr(self, "value", bool(event.new)), "value")
        self.param.watch(self._show, ["value", "label"])

    def _checked(self) -> list[str]:
        return [self.label] if self.value else []

    def _show(self, *_: object) -> None:
        self._group.param.update(options=[self.label], value=self._checked())

    def __panel__(self) -> pn.widgets.CheckBoxGroup:
        return self._group


class FloatInput(_AtOnce, pn.widgets.FloatInput):
    pass
