"""Keeps the address bar on the workload lab's preset (app/views/lab.py), so the link
can be shared. (A scenario's page writes its own: the player, player.js.)

Panel's Location model pushes a history entry on every change, which costs a
synchronous `history.pushState` (and a message back to the server) on every
step. This small JSComponent instead writes the query a moment after the last
step, off the click-to-render path. A new scenario is a new history entry, so
Back returns to the scenario (and the mode and step) the learner left; steps and
modes replace the entry in place. Going Back or Forward sends the address to
Python (`on_pop`), which opens it. Other query parameters (`embed=1`) are kept.
Setting ``load`` opens that query as a new page (the lab's preset picker, from a
group of presets to the other: each is a page of its own).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import param

from app.components.component import AppComponent

# Steps in quick succession (Play, held arrow keys) write the address once.
DEBOUNCE_MS = 150


class AddressBar(AppComponent):
    query = param.String(default="", doc="The query string that reopens the app here")

    load = param.String(
        default="", doc="A query to load as a new page (the lab's other group of presets)"
    )

    debounce_ms = param.Integer(default=DEBOUNCE_MS, constant=True, doc="Wait before a write")

    _esm = "address_bar.js"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        # Called with the address the learner went Back or Forward to.
        self.on_pop: Callable[[str], None] = lambda _query: None

    def _handle_msg(self, data: Any) -> None:
        if isinstance(data, dict) and isinstance(data.get("query"), str):
            self.on_pop(data["query"])
