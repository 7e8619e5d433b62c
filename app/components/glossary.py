"""The glossary panel in the browser: a click on any term on the page opens it at that
entry (glossary.js; the entries are rendered by app/render/glossary.py)."""

from __future__ import annotations

from typing import ClassVar

import param

from app.components.component import AppComponent
from app.style.theme import component_sheets


class Glossary(AppComponent):
    html = param.String(default="", doc="The panel (render_glossary)")

    _esm = "glossary.js"
    _stylesheets: ClassVar[list[str]] = component_sheets("glossary.css")
