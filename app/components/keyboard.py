"""Keyboard shortcuts: arrows step, space plays or pauses, Home restarts, End goes to
the last step.

A tiny JSComponent whose ES module listens on the document (no network, no
sanitiser; works in `panel serve` and in Pyodide). A key asks the player
(player.js) for the same move as its button, under the same rules. Keys are
ignored while focus is in a text field; the slider steps by itself; space is left
to a focused button, radio, checkbox or select. An arrow on the mode picker or the
scenario picker steps instead of switching them by accident.
"""

from __future__ import annotations

import panel as pn
import param

from app.components.esm import FileComponent

# key -> the player's move it asks for (player.py's MOVES)
KEY_MOVES: dict[str, str] = {
    "ArrowLeft": "back",
    "ArrowRight": "forward",
    " ": "play",
    "Home": "restart",
    "End": "end",
}


class KeyboardShortcuts(FileComponent):
    key_moves = param.Dict(
        default=dict(KEY_MOVES), constant=True, doc="Key -> the player's move it asks for"
    )

    _esm = "keyboard.js"


class Keyboard(pn.viewable.Viewer):
    """The shortcuts (the code panel keeps its current line in view itself)."""

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.component = KeyboardShortcuts(width=0, height=0, margin=0)

    def __panel__(self) -> pn.viewable.Viewable:
        return self.component
