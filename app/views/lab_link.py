"""The way into the workload lab from the other pages, and the lab's stylesheets: light, so that a
page without the lab does not import Bokeh's plotting (0.4 s in Pyodide)."""

from __future__ import annotations

import panel as pn

from app.data.lab_presets import default_preset
from app.render.lab import render_lab_link
from app.style.stylesheets import stylesheet
from app.style.theme import CSS

LAB_CSS = stylesheet("app.views", "lab.css")
STYLESHEETS = [CSS, LAB_CSS]
# The page around the lab's roots: the main entry point puts it in the page's head.
LAB_PAGE_CSS = stylesheet("app.views", "lab_page.css")


def lab_link_pane() -> pn.pane.HTML:
    """The main page's way into the lab."""
    return pn.pane.HTML(
        render_lab_link(default_preset()),
        stylesheets=STYLESHEETS,
        margin=(0, 0),
    )
