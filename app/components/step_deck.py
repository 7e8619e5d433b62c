"""Every step's HTML sent once per scenario; steps and modes never leave the browser.

A timeline is immutable and a view is a pure function of (timeline, step), so
every step's HTML, for every mode of the open scenario, is rendered when the
scenario opens. The App's one sender (views/sender.py) puts every view's pages, the
code panel's and the questions' parts into one bundle (Outbox), the player's one
`bundle` parameter (player.py): an edit is one model update, not one per view. Each
view's StepDeck is a slot in the page: the player announces each position with the
bundle (position.js), and every deck swaps in its view's page there: no Python view
re-renders, no HTML is re-sent, no round trip is waited for.

A large timeline (a playground of thousands of blocks) would take tens of
seconds to render page by page: its decks hold only the pages around the shown
step, and Python sends the next ones when the step moves (views/sender.py); until
they arrive a deck keeps its page. A step whose page is not sent yet is null in
its order, as a code plan or a step's questions not sent yet are.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import param

from app.components.esm import FileComponent


def to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class Outbox:
    """The bundle being sent to the page: the position's part (player.py) and each view's
    pages, the code panel's and the questions' parts, each kept as JSON so that a part
    changed is encoded once. ``flush`` writes, with ``write``, the parts the browser has
    not said it holds (``received``, from the player), numbered by `n`; the player
    merges them into what it holds. So an edit is one model update, and a pick sends
    only its view's pages. Where the browser never answers (a page being built, a
    static copy being rendered) the writes carry the whole bundle."""

    def __init__(self) -> None:
        self.write: Callable[[str], None] | None = None  # into the player's `bundle`
        self._parts: dict[str, str] = {}  # part ("view:NAME": a view's) -> its JSON
        self._written = 0
        self.held = 0  # the last write the browser said it holds
        self._unheld: dict[str, int] = {}  # part -> the write that carries it

    @property
    def written(self) -> int:
        """The last write made."""
        return self._written

    def put(self, part: str, value: Any) -> None:
        """The part's new value, written at the next ``flush``."""
        if self.write is not None:
            self._parts[part] = to_json(value)
            self._unheld[part] = self._written + 1

    def replied(self, part: str, value: Any) -> None:
        """The part's new value, which a reply carried to the browser: not written again."""
        self._parts[part] = to_json(value)

    def received(self, written: int) -> None:
        """The browser holds every part up to write ``written``."""
        self.held = max(self.held, written)
        self._unheld = {part: n for part, n in self._unheld.items() if n > written}

    def flush(self) -> None:
        if self.write is None or self._written + 1 not in self._unheld.values():
            return
        self._written += 1
        views: list[str] = []
        parts = [f'"n":{self._written}']
        for part, text in self._parts.items():
            if part in self._unheld:
                name = part.removeprefix("view:")
                (views if name != part else parts).append(f"{json.dumps(name)}:{text}")
        self.write("{" + ",".join([*parts, f'"views":{{{",".join(views)}}}']) + "}")


class StepDeck(FileComponent):
    """A view's slot: it shows its view's page of the bundle at the player's position."""

    view = param.String(default="", constant=True, doc="The view's name in the bundle")

    _esm = "step_deck.js"
