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
from bokeh.models.widgets import CheckboxGroup

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


class Checkbox(_AtOnce, pn.widgets.Checkbox):
    """Drawn as Bokeh's CheckboxGroup of one box, which sits inside its <label>: Bokeh's
    Checkbox puts its text beside the box, not tied to it, so a screen reader (and
    Playwright's get_by_role) found a checkbox with no name."""

    _widget_type = CheckboxGroup
    _rename: ClassVar[dict[str, str | None]] = {**pn.widgets.Checkbox._rename, "label": "labels"}

    def _process_param_change(self, msg: dict[str, Any]) -> dict[str, Any]:
        msg = super()._process_param_change(msg)
        if "active" in msg:
            msg["active"] = [0] if msg["active"] else []
        if "labels" in msg:
            msg["labels"] = [msg["labels"]]
        return msg

    def _process_property_change(self, msg: dict[str, Any]) -> dict[str, Any]:
        if "active" in msg:
            msg = {**msg, "active": 0 in msg["active"]}
        return super()._process_property_change(msg)


class FloatInput(_AtOnce, pn.widgets.FloatInput):
    pass
