"""The one stylesheet of the app, theme.css, passed to every pane (each has a shadow root),
and the sheets of the browser components with a stylesheet of their own.

System fonts only: the app must not fetch anything from outside its origin.
"""

from __future__ import annotations

from app.style.stylesheets import stylesheet

# The focus ring (2 px), alone for each of Panel's own widgets the app makes and for
# the components with a stylesheet of their own; first in the theme.
FOCUS_RING = stylesheet("app.style", "focus_ring.css")
# The base of each part's shadow root on the stepping page and of each component's on the
# static site's early page, as Bokeh's.
PART_HOST = stylesheet("app.style", "part_host.css")
# Every component's root (host.css), in the theme and in each component's own sheets.
HOST = stylesheet("app.style", "host.css")
CSS = FOCUS_RING + HOST + stylesheet("app.style", "theme.css")

# Pygments token colours, scoped to the code panel (a light, high-contrast palette).
PYGMENTS_STYLE = "friendly"


def component_sheets(name: str) -> list[str]:
    """A component's stylesheets: the focus ring, HOST and its own (app/components/``name``)."""
    return [FOCUS_RING, HOST, stylesheet("app.components", name)]
