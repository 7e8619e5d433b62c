"""The start page in the browser (start_page.js): on the static site it lifts the loading
veil from its early page at once, since every entry is a plain link; a `?lab=`
address covers it with the lab's own loading page and a status line."""

from __future__ import annotations

from typing import ClassVar

import param

from app.components.esm import FileComponent
from app.data.url import browser_names
from app.render.lab import render_lab_loading
from app.style.stylesheets import stylesheet
from app.style.theme import component_sheets

# `?lab=` shows this page's copy on the static site (the lab has none): what it waits for.
LAB_HINT = (
    "Opening the workload lab: it runs the engine in Python, which is still starting;"
    " its knobs and charts appear when it is ready."
)


class StartPage(FileComponent):
    html = param.String(default="", doc="The page (render_start_page)")
    veil_css = param.String(
        default=stylesheet("app.components", "loading_veil.css"),
        constant=True,
        doc="The page-level rule that lifts the loading veil from the early page",
    )
    lab_css = param.String(
        default=stylesheet("app.components", "loading_veil.css")
        + stylesheet("app.components", "start_lab_wait.css")
        + stylesheet("app.components", "status_note.css"),
        constant=True,
        doc="The page-level rules while a `?lab=` address waits for Python under the veil",
    )
    lab_hint = param.String(default=LAB_HINT, constant=True)
    lab_html = param.String(
        default=render_lab_loading(),
        constant=True,
        doc="The lab's own loading page, over this page's copy while `?lab=` waits",
    )
    address = param.Dict(default=browser_names(), constant=True, doc="url.py's (address.js)")

    _esm = "start_page.js"
    _stylesheets: ClassVar[list[str]] = component_sheets("start_page.css")
