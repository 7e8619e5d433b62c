"""The one stylesheet of the app, theme.css, passed to every pane (each has a shadow root).

System fonts only: the app must not fetch anything from outside its origin.
"""

from __future__ import annotations

from pathlib import Path

# The focus ring (2 px), alone for each of Panel's own widgets the app makes and for
# the components with a stylesheet of their own; first in the theme.
FOCUS_RING = (Path(__file__).parent / "focus_ring.css").read_text(encoding="utf-8")
CSS = FOCUS_RING + (Path(__file__).parent / "theme.css").read_text(encoding="utf-8")

# Pygments token colours, scoped to the code panel (a light, high-contrast palette).
PYGMENTS_STYLE = "friendly"
