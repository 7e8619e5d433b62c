"""Panel's own stylesheets from this server, for every session, however it was opened.

Panel points a widget's stylesheets (`css/button.css`, `theme/default.css`...) at the
document's ``dist_url``, which `panel serve` sets only while rendering a session's HTML
page; without it, Panel falls back to cdn.holoviz.org. Bokeh discards a session whose
browser has not connected within ``--unused-session-lifetime`` (15 s), and when that
browser's WebSocket arrives at last, makes the session anew from the WebSocket alone,
with no HTML page and so no ``dist_url``: on a busy workshop server (30 sessions
opened at once on two cores) a third of the pages then asked the CDN for their
widgets' CSS. Each session's document names the local dist path before the app builds
anything, so it holds whichever way the session was made. Pyodide keeps Panel's
choice (the static site's builder rewrites the CDN's address to its own copy).
"""

from __future__ import annotations

from typing import Any

from panel.io.resources import get_dist_path

from app.host.runtime import in_pyodide


def serve_panel_assets_locally(document: Any) -> None:
    """Name this server's copy of Panel's dist as ``document``'s ``dist_url`` (the one
    `panel serve` would name), unless a session page has named it already."""
    if in_pyodide() or document is None or document.session_context is None:
        return
    document.template_variables.setdefault("dist_url", get_dist_path(cdn=False))
