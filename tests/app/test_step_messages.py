"""Python holds no position: the stepping page writes none of its parameters, so a step, a
play tick, a mode or an engine switch in the browser reaches no Python (the real browser's
messages are counted in tests/app/test_browser_serve.py). What the page asks of Python is a
request, answered by one message with its id."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bokeh.document import Document
from panel.io.state import set_curdoc

from app.data.url import parse_link
from app.page.layout import App

STEP_PAGE = Path(__file__).resolve().parents[2] / "app" / "components" / "step_page.js"
# `model.name = ...` (not `==`), or `model[name] = ...`: a write the browser would send.
WRITE = re.compile(r"\bmodel(\.\w+|\[[^\]]+\])\s*=(?!=)")


def step_page_modules() -> list[Path]:
    """The stepping page's module and every module it imports, at any depth."""
    found: list[Path] = []
    todo = [STEP_PAGE]
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found.append(path)
        for name in re.findall(r"^import .* from '(\./[\w/.]+)'", path.read_text(), re.M):
            todo.append((path.parent / name).resolve())
    return found


def test_the_stepping_page_writes_none_of_its_parameters() -> None:
    modules = step_page_modules()
    assert {p.name for p in modules} >= {"player.js", "code_panel.js", "chain_deck.js"}
    writes = [
        f"{path.name}: {line.strip()}"
        for path in modules
        for line in path.read_text().splitlines()
        if WRITE.search(line) and not line.strip().startswith("//")
    ]
    assert writes == []


def test_the_check_sees_a_write() -> None:
    """The check can fail: a write to a parameter is seen, a comparison is not."""
    assert WRITE.search("    model.at = [key, step]")
    assert WRITE.search("model['at'] = 1")
    assert not WRITE.search("if (model.layout === 'embed') {")


def test_a_request_is_answered_in_one_message_with_its_id(doc: Document) -> None:
    """The channel's other half: a pick from the browser gets one reply, named by its id."""
    app = App(link=parse_link("?scenario=reset&mode=keep&step=1"))
    with set_curdoc(doc):
        doc.add_root(app.__panel__().get_root(doc))
    sent: list[Any] = []
    doc.on_change(lambda event: sent.append(event))
    with set_curdoc(doc):
        app.page.receive({"ask": "code", "key": "reset/keep", "step": 1, "index": 0, "id": 41})
    (message,) = sent
    assert message.attr == "reply_json"
    reply = json.loads(message.new)
    assert reply["id"] == 41 and reply["picked"]["key"] == "reset/keep"
