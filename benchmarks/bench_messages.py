"""How many messages a step, a mode change and an edit cost on `panel serve`.

Counts the Bokeh protocol messages on the page's websocket, in each direction, while
a learner steps the flagship, switches its mode and edits a playground script, and
how many model updates (a PATCH-DOC's events) the server's messages carry. Issue 30's
targets: a step or a mode change sends nothing to Python's views; an edit sends at
most three model updates. A figure, not a test: the count is what the design does.

    python benchmarks/bench_messages.py [--steps 5] [--edits 5]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright

from benchmarks.bench_playground_edit import FIRST_TOKEN, MEASURE, MEASURE_STEP, SCRIPT
from tests.app.browser import chromium, panel_serve
from tests.app.playground_checks import start_empty

# The page is quiet when no frame has passed for this long (the views' other pages
# follow the shown one 50 ms later).
QUIET_MS = 600


@dataclass
class Direction:
    """One direction of the websocket: its frames, read as Bokeh's multipart messages
    (a header naming the message type and its buffers, metadata, content, buffers)."""

    messages: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    attrs: Counter[str] = field(default_factory=Counter)  # which property each update set
    _expect: list[str] = field(default_factory=list)  # the parts still to come
    _msgtype: str = ""

    def frame(self, payload: str | bytes) -> None:
        if isinstance(payload, bytes):  # a buffer
            return
        if not self._expect:
            header = json.loads(payload)
            self._msgtype = header.get("msgtype", "?")
            self.messages[self._msgtype] += 1
            self._expect = ["metadata", "content"]
            return
        part = self._expect.pop(0)
        if part == "content" and self._msgtype == "PATCH-DOC":
            for event in json.loads(payload).get("events", []):
                self.events[event.get("kind", "?")] += 1
                if "attr" in event:
                    self.attrs[event["attr"]] += 1

    def reset(self) -> None:
        self.messages.clear()
        self.events.clear()
        self.attrs.clear()


@dataclass
class Socket:
    to_server: Direction = field(default_factory=Direction)
    to_page: Direction = field(default_factory=Direction)

    def watch(self, page: Any) -> None:
        def on_socket(ws: Any) -> None:
            ws.on("framesent", self.to_server.frame)
            ws.on("framereceived", self.to_page.frame)

        page.on("websocket", on_socket)

    def reset(self) -> None:
        self.to_server.reset()
        self.to_page.reset()


def settle(page: Any) -> None:
    """Wait until no websocket frame has passed for QUIET_MS."""
    page.wait_for_timeout(QUIET_MS)


def report(what: str, socket: Socket, count: int) -> None:
    sent = sum(socket.to_server.messages.values())
    received = sum(socket.to_page.messages.values())
    updates = sum(socket.to_page.events.values())
    print(f"{what} ({count}):")
    print(f"  page -> Python: {sent / count:.1f} messages each {dict(socket.to_server.messages)}")
    print(f"  Python -> page: {received / count:.1f} messages each {dict(socket.to_page.messages)}")
    print(f"  model updates from Python: {updates / count:.1f} each {dict(socket.to_page.events)}")
    print(f"  properties set: {dict(socket.to_page.attrs.most_common())}")
    print(f"  properties the page set: {dict(socket.to_server.attrs.most_common())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--edits", type=int, default=5)
    args = parser.parse_args()
    socket = Socket()
    with (
        panel_serve() as url,
        sync_playwright() as playwright,
        chromium(playwright, viewport={"width": 1280, "height": 800}) as context,
    ):
        page = context.new_page()
        page.set_default_timeout(120_000)
        socket.watch(page)
        page.goto(f"{url}?scenario=reset&mode=keep")
        page.wait_for_function("() => !document.body.classList.contains('pn-loading')")
        settle(page)

        socket.reset()
        forward = page.get_by_role("button", name="Step forward").element_handle()
        for _ in range(args.steps):
            page.evaluate(MEASURE_STEP, forward)
            settle(page)
        report("Step forward", socket, args.steps)

        socket.reset()
        modes = ["preempt", "default", "keep"]
        for mode in modes:
            page.get_by_role("radio", name=mode).check()
            settle(page)
        report("Mode change", socket, len(modes))

        page.get_by_role("button", name="Edit a copy").click()
        start_empty(page)
        page.get_by_label("GPU blocks").fill("10")
        area = page.get_by_label("Script (one action per line)")
        area.fill(SCRIPT.format(a=4, g=FIRST_TOKEN))
        page.get_by_test_id("step-counter").filter(has_text="/ 40").wait_for()
        settle(page)
        socket.reset()
        handle = area.element_handle()
        for i in range(args.edits):
            page.evaluate(MEASURE, [handle, SCRIPT.format(a=4 + i % 2, g=FIRST_TOKEN + i + 1)])
            settle(page)
        report("Playground edit", socket, args.edits)


if __name__ == "__main__":
    main()
