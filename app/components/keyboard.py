"""Keyboard shortcuts: arrows step, space plays or pauses, Home restarts.

A tiny JSComponent whose ES module listens on the document (no network, no
sanitiser; works in `panel serve` and in Pyodide). A key *clicks the matching button*, so a
key does exactly what the button does, and quick repeats are not lost: button
clicks reach Python as separate events, where synced properties would be merged.
Keys are ignored while focus is in a text field, a select or a slider, and space
is left to a focused button, so native behaviour is kept.
"""

from __future__ import annotations

import panel as pn
import param

from app.components.component import AppComponent

# key -> accessible names of the button it presses (the first one present is used)
KEY_BUTTONS: dict[str, tuple[str, ...]] = {
    "ArrowLeft": ("Step back",),
    "ArrowRight": ("Step forward",),
    " ": ("Play", "Pause"),
    "Home": ("Restart",),
}


class KeyboardShortcuts(AppComponent):
    key_buttons = param.Dict(
        default={key: list(names) for key, names in KEY_BUTTONS.items()},
        constant=True,
        doc="Key -> names of the button it presses",
    )

    # Panel renders every component in its own shadow root: keyboard.js searches them all.
    _esm = "keyboard.js"


class Keyboard(pn.viewable.Viewer):
    """The shortcuts (the code panel keeps its current line in view itself)."""

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.component = KeyboardShortcuts(width=0, height=0, margin=0)

    def __panel__(self) -> pn.viewable.Viewable:
        return self.component
