"""Tabs in the browser: one panel shown, the others one click away.

The embed (the write-up's figure) has to fit 800x900, so its panels take turns
under one row of tabs. Switching is plain JavaScript (panel_tabs.js), so it works
before Python is ready on the static site; a panel that asks to be seen (the
glossary, when a term is clicked) brings its tab forward.
"""

from __future__ import annotations

from typing import ClassVar

import param
from panel.viewable import Children

from app.components.esm import FileComponent
from app.style.stylesheets import stylesheet


class PanelTabs(FileComponent):
    labels = param.List(default=[], item_type=str, doc="One label per panel")
    objects = Children(default=[], doc="The panels, in the labels' order")
    active = param.Integer(default=0, doc="The panel shown first")
    dense = param.Boolean(default=False, doc="Small tabs: a second row in the embed")

    _esm = "panel_tabs.js"
    _stylesheets: ClassVar[list[str]] = [stylesheet("app.components", "panel_tabs.css")]
