"""Widgets whose changes in the browser reach Python at once on `panel serve`.

On a server Panel holds every change from the browser for 50 ms (``_debounce``)
before running the watchers, to gather a burst of changes into one. Each playground
edit and lab knob change waited those 50 ms for nothing: the app already coalesces a
burst (a change that arrives while Python is busy joins the one being processed) and
makes stale work give way (app/views/sender.py). A change listed in
``_priority_changes`` is run on the next tick instead. In Pyodide there is no
server session and changes were never held. Like the app's own components, they do
not hear Python's changes back as the browser's (component.py).
"""

from __future__ import annotations

from typing import ClassVar

import panel as pn

from app.components.component import SkipsEchoes


class _AtOnce(SkipsEchoes):
    _priority_changes: ClassVar[list[str]] = ["value", "value_input"]


class TextInput(_AtOnce, pn.widgets.TextInput):
    pass


class TextAreaInput(_AtOnce, pn.widgets.TextAreaInput):
    pass


class IntInput(_AtOnce, pn.widgets.IntInput):
    pass


class Select(_AtOnce, pn.widgets.Select):
    pass


class Checkbox(_AtOnce, pn.widgets.Checkbox):
    pass


class FloatInput(_AtOnce, pn.widgets.FloatInput):
    pass
